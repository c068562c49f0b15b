/**
 * Descendants of a process, read from /proc. Used only without bubblewrap (isolation 'none'),
 * where no pid namespace or cgroup holds the sandbox's processes together.
 */

import { readdir, readFile } from 'node:fs/promises'
import { setTimeout as sleep } from 'node:timers/promises'

/** Parent pid from `/proc/<pid>/stat` text; `comm` may hold spaces and parentheses. */
export function parseStatParentPid(stat: string): number | undefined {
	const close = stat.lastIndexOf(')')
	if (close < 0) return undefined
	const fields = stat.slice(close + 2).split(' ')
	const ppid = Number(fields[1])
	return Number.isSafeInteger(ppid) ? ppid : undefined
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
		try {
			const ppid = parseStatParentPid(await readFile(`/proc/${entry}/stat`, 'utf8'))
			if (ppid !== undefined) parents.set(Number(entry), ppid)
		} catch {
			// The process exited while we looked.
		}
	}
	return descendantsOf(root, parents)
}

/** State letter from `/proc/<pid>/stat` (`R`, `S`, `Z`, …). */
export function parseStatState(stat: string): string | undefined {
	const close = stat.lastIndexOf(')')
	return close < 0 ? undefined : stat.slice(close + 2, close + 3)
}

async function alive(pid: number): Promise<boolean> {
	try {
		const state = parseStatState(await readFile(`/proc/${pid}/stat`, 'utf8'))
		// A zombie holds no resources; whoever inherited it (PID 1) reaps it.
		return state !== 'Z' && state !== 'X'
	} catch {
		return false
	}
}

/** Polls until every pid is gone or a zombie, or `timeoutMs` passes. */
export async function waitUntilGone(pids: readonly number[], timeoutMs: number): Promise<boolean> {
	const deadline = Date.now() + timeoutMs
	let remaining = [...pids]
	while (remaining.length > 0) {
		const states = await Promise.all(remaining.map(alive))
		remaining = remaining.filter((_, index) => states[index])
		if (remaining.length === 0) return true
		if (Date.now() > deadline) return false
		await sleep(10)
	}
	return true
}
