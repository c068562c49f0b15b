/**
 * What one command's tree used, read from its own cgroups just before they are given up: the
 * counters of the group it was killed through (v2: `cpu.stat` always, `memory.peak`,
 * `memory.events`, `io.stat` where those controllers reach it) and of its v1 counting groups
 * (`cpuacct.usage_user` / `_sys`, `memory.max_usage_in_bytes`, `memory.oom_control`). A counter
 * the kernel does not offer there is absent, never zero. The parsers are pure.
 */
import { existsSync, readFileSync } from 'node:fs'
import { basename, dirname } from 'node:path'

/** The wire's accounting fields of a result (`ExecutionUsage` in `wire/protocol.ts`). */
export interface CommandUsage {
	oomKilled?: boolean
	cpuUserMs?: number
	cpuSystemMs?: number
	peakMemoryBytes?: number
	ioReadBytes?: number
	ioWriteBytes?: number
}

/**
 * Counter files a hierarchy does not offer, as `<parent>/<name>`: every group under one parent has
 * the same files (the hierarchy's, or on v2 what the parent enables), so one miss stands for all
 * and the next command's result is not held up by the same failing opens. A few names per parent.
 * A miss counts only while the group's own directory is there.
 */
const absent = new Set<string>()

function read(path: string): string | undefined {
	const key = `${dirname(dirname(path))}/${basename(path)}`
	if (absent.has(key)) return undefined
	try {
		return readFileSync(path, 'utf8')
	} catch (error) {
		const missing = error instanceof Error && 'code' in error && error.code === 'ENOENT'
		// Not when the group itself is gone already (read after a kill removed it).
		if (missing && existsSync(dirname(path))) absent.add(key)
		return undefined
	}
}

/** `key value` lines (`cpu.stat`, `memory.events`, `memory.oom_control`) → the value of `key`. */
export function keyedValue(text: string | undefined, key: string): number | undefined {
	if (text === undefined) return undefined
	const match = new RegExp(`^${key} (\\d+)$`, 'm').exec(text)
	return match?.[1] === undefined ? undefined : Number(match[1])
}

/** One integer file (`memory.peak`, `cpuacct.usage_user`). */
export function integerFile(text: string | undefined): number | undefined {
	if (text === undefined || !/^\d+\s*$/.test(text)) return undefined
	return Number(text.trim())
}

/** `io.stat` lines (`<maj:min> rbytes=N wbytes=N …`) summed over devices. */
export function ioBytes(text: string | undefined): { read: number; written: number } | undefined {
	if (text === undefined) return undefined
	let read = 0
	let written = 0
	for (const line of text.split('\n')) {
		read += Number(/\brbytes=(\d+)/.exec(line)?.[1] ?? 0)
		written += Number(/\bwbytes=(\d+)/.exec(line)?.[1] ?? 0)
	}
	return { read, written }
}

const ms = (value: number | undefined, perMs: number) =>
	value === undefined ? undefined : Math.round(value / perMs)

/** Fills what `usage` lacks from the files under `dir` (a v2 group or a v1 counting group). */
function readGroup(dir: string, usage: CommandUsage): void {
	const cpuStat = read(`${dir}/cpu.stat`)
	usage.cpuUserMs ??= ms(keyedValue(cpuStat, 'user_usec'), 1000)
	usage.cpuSystemMs ??= ms(keyedValue(cpuStat, 'system_usec'), 1000)
	usage.cpuUserMs ??= ms(integerFile(read(`${dir}/cpuacct.usage_user`)), 1e6)
	usage.cpuSystemMs ??= ms(integerFile(read(`${dir}/cpuacct.usage_sys`)), 1e6)
	usage.peakMemoryBytes ??= integerFile(read(`${dir}/memory.peak`))
	usage.peakMemoryBytes ??= integerFile(read(`${dir}/memory.max_usage_in_bytes`))
	const kills =
		keyedValue(read(`${dir}/memory.events`), 'oom_kill') ??
		keyedValue(read(`${dir}/memory.oom_control`), 'oom_kill')
	if (kills !== undefined) usage.oomKilled = (usage.oomKilled ?? false) || kills > 0
	if (usage.ioReadBytes === undefined) {
		const io = ioBytes(read(`${dir}/io.stat`))
		if (io) {
			usage.ioReadBytes = io.read
			usage.ioWriteBytes = io.written
		}
	}
}

/** What the groups at `dirs` counted; only the fields some group offers. */
export function readCommandUsage(dirs: readonly string[]): CommandUsage {
	const usage: CommandUsage = {}
	for (const dir of dirs) readGroup(dir, usage)
	for (const key of Object.keys(usage) as (keyof CommandUsage)[]) {
		if (usage[key] === undefined) delete usage[key]
	}
	return usage
}
