/**
 * Reading the process table through `/proc`: pure parsers for the kernel's text formats plus thin
 * readers around them. Used to find a terminal's PTY slave and to tear down a whole kernel session
 * (a job backgrounded with `&` is in the shell's session but not in any group we spawned).
 */

import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs'
import {
	procStatField,
	procStatNumber,
	readProcStatText,
	splitProcStat,
} from '../../common/proc-stat.js'

export interface ProcStat {
	readonly pid: number
	readonly comm: string
	/** One-letter state (`R`, `S`, `Z`, …). */
	readonly state: string
	readonly ppid: number
	readonly pgrp: number
	readonly session: number
	/** Encoded controlling terminal (`major << 8 | minor` with the high minor bits above bit 20). */
	readonly ttyNr: number
}

/** Major number of Unix98 PTY slaves (`/dev/pts/N`). */
export const PTY_SLAVE_MAJOR = 136

/** `/proc/<pid>/stat` as the fields the agent reads; undefined for text that does not have the shape. */
export function parseProcStat(text: string): ProcStat | undefined {
	const line = splitProcStat(text)
	if (!line) return undefined
	const pid = Number(line.pidText)
	const state = procStatField(line, 'state')
	const ppid = procStatNumber(line, 'ppid')
	const pgrp = procStatNumber(line, 'pgrp')
	const session = procStatNumber(line, 'session')
	const ttyNr = procStatNumber(line, 'ttyNr')
	if (line.pidText === '' || !Number.isSafeInteger(pid) || state === undefined) return undefined
	if (ppid === undefined || pgrp === undefined || session === undefined || ttyNr === undefined) {
		return undefined
	}
	return { pid, comm: line.comm, state, ppid, pgrp, session, ttyNr }
}

/** Decodes a `tty_nr` the way the kernel's `new_encode_dev` packs it. */
export function decodeTtyNr(ttyNr: number): { readonly major: number; readonly minor: number } {
	return { major: (ttyNr >> 8) & 0xfff, minor: (ttyNr & 0xff) | ((ttyNr >> 12) & 0xfff00) }
}

/** Parses `/proc/<pid>/task/<tid>/children`: space-separated pids. */
export function parseChildrenList(text: string): number[] {
	return text
		.split(/\s+/)
		.filter((entry) => /^\d+$/.test(entry))
		.map(Number)
}

/** Whether a `readlink` of `/proc/<pid>/fd/0` names a PTY slave; returns that path or undefined. */
export function ptySlaveFromLink(link: string): string | undefined {
	return /^\/dev\/pts\/\d+$/.test(link) ? link : undefined
}

/** Pids of `stats` whose parent is `parent`, never a zombie, in ascending order. */
export function childrenOf(stats: Iterable<ProcStat>, parent: number): number[] {
	const pids: number[] = []
	for (const stat of stats) if (stat.ppid === parent && stat.state !== 'Z') pids.push(stat.pid)
	return pids.sort((a, b) => a - b)
}

/** Pids of `stats` in `session`, never `exclude` (the agent itself) and never a zombie. */
export function pidsInSession(
	stats: Iterable<ProcStat>,
	session: number,
	exclude: ReadonlySet<number> = new Set(),
): number[] {
	const pids: number[] = []
	for (const stat of stats) {
		if (stat.session !== session || exclude.has(stat.pid) || stat.state === 'Z') continue
		pids.push(stat.pid)
	}
	return pids
}

// ---- thin readers ------------------------------------------------------------------------------

export function readProcStat(pid: number): ProcStat | undefined {
	const text = readProcStatText(pid)
	return text === undefined ? undefined : parseProcStat(text)
}

/** Every process currently visible in `/proc` (those that vanish mid-scan are skipped). */
export function readAllProcStats(): ProcStat[] {
	const stats: ProcStat[] = []
	for (const name of readdirSync('/proc')) {
		if (!/^\d+$/.test(name)) continue
		const stat = readProcStat(Number(name))
		if (stat) stats.push(stat)
	}
	return stats
}

/** `pid`'s children from the kernel's `children` file; undefined where the kernel has none for a
 * live process (gVisor), so the caller derives them from every process's parent instead. */
function readChildrenFile(pid: number): number[] | undefined {
	try {
		return parseChildrenList(readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8'))
	} catch (error) {
		const gone = (error as NodeJS.ErrnoException).code !== 'ENOENT' || !existsSync(`/proc/${pid}`)
		return gone ? [] : undefined
	}
}

/** `pid`'s children; from a scan of every process's parent (`allStats`) where the kernel has no
 * `children` file (gVisor), so the same agent finds a PTY's shell on every runtime. */
export function readChildren(
	pid: number,
	allStats: () => Iterable<ProcStat> = readAllProcStats,
): number[] {
	return readChildrenFile(pid) ?? childrenOf(allStats(), pid)
}

/** The PTY slave `pid` has on stdin, from its fd link or (when that is unreadable) its `tty_nr`. */
export function readPtySlave(pid: number): string | undefined {
	try {
		const slave = ptySlaveFromLink(readlinkSync(`/proc/${pid}/fd/0`))
		if (slave) return slave
	} catch {
		// Fall through to tty_nr: fd links can be unreadable across a uid change.
	}
	const stat = readProcStat(pid)
	if (!stat) return undefined
	const { major, minor } = decodeTtyNr(stat.ttyNr)
	return major === PTY_SLAVE_MAJOR ? `/dev/pts/${minor}` : undefined
}

/** Breadth-first search of `root`'s descendants for the first with a PTY slave on stdin. */
export function findPtyDescendant(root: number): { pid: number; slave: string } | undefined {
	// Where children come from a /proc scan, one scan serves the whole search.
	let scan: ProcStat[] | undefined
	const allStats = () => {
		scan ??= readAllProcStats()
		return scan
	}
	const children = (pid: number) => readChildren(pid, allStats)
	const queue = children(root)
	const seen = new Set<number>()
	while (queue.length > 0) {
		const pid = queue.shift()
		if (pid === undefined || seen.has(pid)) continue
		seen.add(pid)
		const slave = readPtySlave(pid)
		if (slave) return { pid, slave }
		queue.push(...children(pid))
	}
	return undefined
}

/**
 * SIGKILLs every process in kernel session `session` (never this process), repeating while a pass
 * still finds some, since a dying shell can fork. Returns how many signals were sent.
 */
export function killSession(session: number, maxRounds = 5): number {
	const self = readProcStat(process.pid)
	// Never the agent's own session, nor the kernel's pseudo-session 0.
	if (session <= 1 || session === self?.session) return 0
	let signalled = 0
	for (let round = 0; round < maxRounds; round++) {
		const pids = pidsInSession(readAllProcStats(), session, new Set([process.pid]))
		if (pids.length === 0) break
		for (const pid of pids) {
			try {
				process.kill(pid, 'SIGKILL')
				signalled++
			} catch {
				// Already gone.
			}
		}
	}
	return signalled
}
