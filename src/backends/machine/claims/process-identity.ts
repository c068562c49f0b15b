/**
 * A process named by pid AND its start time (field 22 of `/proc/<pid>/stat`, in clock ticks since
 * boot), so a recorded pid that the kernel has since handed to an unrelated program is never
 * signalled. Pure parser plus two thin readers.
 */
import { readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'

export interface ProcessIdentity {
	readonly pid: number
	/** `starttime` from `/proc/<pid>/stat`, as a decimal string (it can exceed 2^53 in theory). */
	readonly startTime: string
}

/** `starttime` (field 22) from `/proc/<pid>/stat` text; `comm` may hold spaces and parentheses. */
export function parseStatStartTime(stat: string): string | undefined {
	const close = stat.lastIndexOf(')')
	if (close < 0) return undefined
	// Fields after `comm` start at field 3 (state); starttime is field 22 ⇒ index 19 here.
	const value = stat.slice(close + 2).split(' ')[19]
	return value !== undefined && /^\d+$/.test(value) ? value : undefined
}

/** State letter from `/proc/<pid>/stat`. */
function parseState(stat: string): string | undefined {
	const close = stat.lastIndexOf(')')
	return close < 0 ? undefined : stat.slice(close + 2, close + 3)
}

/** Whether `stat` (or its absence) describes the recorded process, alive and not a zombie. */
export function statMatches(stat: string | undefined, startTime: string): boolean {
	if (stat === undefined) return false
	const state = parseState(stat)
	if (state === 'Z' || state === 'X') return false
	return parseStatStartTime(stat) === startTime
}

export async function readProcessIdentity(pid: number): Promise<ProcessIdentity | undefined> {
	try {
		const startTime = parseStatStartTime(await readFile(`/proc/${pid}/stat`, 'utf8'))
		return startTime === undefined ? undefined : { pid, startTime }
	} catch {
		return undefined
	}
}

function readStatSync(pid: number): string | undefined {
	try {
		return readFileSync(`/proc/${pid}/stat`, 'utf8')
	} catch {
		return undefined
	}
}

/** True while the very process `identity` names is alive (synchronous: used as a dial predicate). */
export function isProcessAlive(identity: ProcessIdentity): boolean {
	return statMatches(readStatSync(identity.pid), identity.startTime)
}
