/**
 * The kernel's cgroup migration lock kept warm while sandboxes start.
 *
 * After a quiet spell of a few tens of milliseconds, the kernel's next move of a process between
 * cgroups first waits for an RCU grace period (5–20 ms; the lock's readers went back to their fast
 * path, and the writer must wait them out). A start meets that wait twice: at the launch's join
 * and at the agent's first command group, each with nothing else to do meanwhile. A move of a
 * thread to the group it is already in takes the same lock and keeps it warm for one more grace
 * period. So while any start of this process is in flight, this process writes its own main
 * thread's id into its own group's `tasks` (v1; v2: `cgroup.procs`) every `TICK_MS`: nothing
 * moves, the first write pays the grace period beside the start's other work, and the start's
 * joins find the lock warm. While the lock is warm every fork on the host takes the lock's slower
 * shared path, which is why it is held only while a start runs.
 *
 * Best effort: a host that may not write there (not root) or whose write fails stops trying for
 * the life of the process; nothing depends on it but speed.
 */
import { writeFile } from 'node:fs/promises'
import { type CgroupMounts, groupDirectory, type ProcCgroupMembership } from './cgroup-layout.js'
import { readCgroupHostView } from './cgroup-limits.js'

/** Between writes: shorter than a grace period, so the lock never cools in between. */
export const TICK_MS = 5
/** v1 hierarchies in the order their `tasks` file is preferred (any one takes the same lock). */
const V1_PREFERENCE: readonly string[] = ['pids', 'freezer', 'cpuacct', 'cpu', 'memory']

/** The file a write of this process's main thread id leaves everything where it is (pure). */
export function warmthTarget(
	membership: ProcCgroupMembership,
	mounts: CgroupMounts,
): string | undefined {
	for (const controller of V1_PREFERENCE) {
		const mount = mounts.v1[controller]
		const path = membership.v1[controller]
		if (mount === undefined || path === undefined) continue
		const dir = groupDirectory(mount, path)
		if (dir !== undefined) return `${dir}/tasks`
	}
	if (mounts.v2 === undefined || membership.v2 === undefined) return undefined
	const dir = groupDirectory(mounts.v2, membership.v2)
	return dir === undefined ? undefined : `${dir}/cgroup.procs`
}

let holders = 0
let target: Promise<string | undefined> | undefined
let disabled = false
let ticking = false
let writes = 0

/** What the warmth did so far in this process (for tests and the bench). */
export function migrationWarmthState(): {
	readonly writes: number
	readonly ticking: boolean
	readonly disabled: boolean
} {
	return { writes, ticking, disabled }
}

/** The file to write, once per process; none on a host that may not write there (not root). */
async function findTarget(): Promise<string | undefined> {
	if (process.getuid?.() !== 0) return undefined
	const { membership, mounts } = await readCgroupHostView()
	return warmthTarget(membership, mounts)
}

/** One write, then the next `TICK_MS` after it while anyone holds; one chain at a time. */
async function tick(): Promise<void> {
	if (ticking) return
	ticking = true
	try {
		while (holders > 0 && !disabled) {
			target ??= findTarget()
			const file = await target
			if (file === undefined) {
				disabled = true
				return
			}
			await writeFile(file, String(process.pid))
			writes += 1
			await new Promise<void>((resolve) => setTimeout(resolve, TICK_MS).unref())
		}
	} catch {
		disabled = true
	} finally {
		ticking = false
	}
}

/** Runs `work` with the lock kept warm until it settles. */
export async function withMigrationWarmth<T>(work: () => Promise<T>): Promise<T> {
	holders += 1
	void tick()
	try {
		return await work()
	} finally {
		holders -= 1
	}
}
