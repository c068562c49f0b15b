/**
 * A process named by pid AND its start time (field 22 of `/proc/<pid>/stat`, in clock ticks since
 * boot), so a recorded pid that the kernel has since handed to an unrelated program is never
 * signalled. Pure parser plus two thin readers.
 */
import {
	isDeadState,
	type ProcStatLine,
	procStatField,
	readProcStatText,
	readProcStatTextAsync,
	splitProcStat,
} from '../../../common/proc-stat.js'

export interface ProcessIdentity {
	readonly pid: number
	/** `starttime` from `/proc/<pid>/stat`, as a decimal string (it can exceed 2^53 in theory). */
	readonly startTime: string
}

function startTimeOf(line: ProcStatLine): string | undefined {
	const value = procStatField(line, 'startTime')
	return value !== undefined && /^\d+$/.test(value) ? value : undefined
}

/** `starttime` (field 22) from `/proc/<pid>/stat` text. */
export function parseStatStartTime(stat: string): string | undefined {
	const line = splitProcStat(stat)
	return line && startTimeOf(line)
}

/** Whether `stat` (or its absence) describes the recorded process, alive and not a zombie. */
export function statMatches(stat: string | undefined, startTime: string): boolean {
	const line = stat === undefined ? undefined : splitProcStat(stat)
	if (!line || isDeadState(procStatField(line, 'state'))) return false
	return startTimeOf(line) === startTime
}

export async function readProcessIdentity(pid: number): Promise<ProcessIdentity | undefined> {
	const text = await readProcStatTextAsync(pid)
	const startTime = text === undefined ? undefined : parseStatStartTime(text)
	return startTime === undefined ? undefined : { pid, startTime }
}

/** True while the very process `identity` names is alive (synchronous: used as a dial predicate). */
export function isProcessAlive(identity: ProcessIdentity): boolean {
	return statMatches(readProcStatText(identity.pid), identity.startTime)
}
