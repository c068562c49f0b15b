/**
 * Descendants of a process, read from /proc. Used only without bubblewrap (isolation 'none'),
 * where no pid namespace or cgroup holds the sandbox's processes together.
 */

import { readdir } from 'node:fs/promises'
import { pollUntil } from '../../../common/poll-until.js'
import {
	isDeadState,
	procStatField,
	procStatNumber,
	readProcStatTextAsync,
	splitProcStat,
} from '../../../common/proc-stat.js'

/** Parent pid from `/proc/<pid>/stat` text. */
export function parseStatParentPid(stat: string): number | undefined {
	const line = splitProcStat(stat)
	return line && procStatNumber(line, 'ppid')
}

/** Every pid whose ancestry reaches `root` (excluding `root`), parents before children. */
export function descendantsOf(root: number, parents: ReadonlyMap<number, number>): number[] {
	const children = new Map<number, number[]>()
	for (const [pid, ppid] of parents) {
		const list = children.get(ppid) ?? []
		list.push(pid)
		children.set(ppid, list)
	}
	const out: number[] = []
	const queue = [root]
	for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
		for (const child of children.get(next) ?? []) {
			out.push(child)
			queue.push(child)
		}
	}
	return out
}

export async function descendantPids(root: number): Promise<number[]> {
	const parents = new Map<number, number>()
	for (const entry of await readdir('/proc')) {
		if (!/^\d+$/.test(entry)) continue
		// A process that exited while we looked has no text and no parent.
		const text = await readProcStatTextAsync(Number(entry))
		const ppid = text === undefined ? undefined : parseStatParentPid(text)
		if (ppid !== undefined) parents.set(Number(entry), ppid)
	}
	return descendantsOf(root, parents)
}

async function alive(pid: number): Promise<boolean> {
	const text = await readProcStatTextAsync(pid)
	const line = text === undefined ? undefined : splitProcStat(text)
	// A zombie holds no resources; whoever inherited it (PID 1) reaps it.
	return line !== undefined && !isDeadState(procStatField(line, 'state'))
}

/** Polls until every pid is gone or a zombie, or `timeoutMs` passes. */
export async function waitUntilGone(pids: readonly number[], timeoutMs: number): Promise<boolean> {
	let remaining = [...pids]
	return pollUntil(async () => {
		const states = await Promise.all(remaining.map(alive))
		remaining = remaining.filter((_, index) => states[index])
		return remaining.length === 0
	}, performance.now() + timeoutMs)
}
