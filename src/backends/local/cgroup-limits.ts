/**
 * Creates, fills and removes one sandbox's cgroups (the thin I/O shell over `cgroup-layout.ts`).
 * The launcher joins the returned `procsFiles` before bwrap starts; `remove()` kills whatever is
 * still inside (v1 has no `cgroup.kill`) and removes the groups.
 */

import { access, mkdir, readFile, rmdir, writeFile } from 'node:fs/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import {
	type CgroupLimitValues,
	type CgroupMounts,
	type CgroupPlan,
	type LimitController,
	limitWrites,
	type ProcCgroupMembership,
	parseCgroupMounts,
	parseProcCgroup,
	planCgroups,
} from './cgroup-layout.js'
import { CgroupLimitsUnavailableError, LocalSandboxCleanupError } from './local-errors.js'

export interface CgroupHostView {
	readonly membership: ProcCgroupMembership
	readonly mounts: CgroupMounts
	readonly v2Controllers?: string
}

async function readOptional(path: string): Promise<string | undefined> {
	try {
		return await readFile(path, 'utf8')
	} catch {
		return undefined
	}
}

/** What this process can see of the cgroup hierarchies. */
export async function readCgroupHostView(): Promise<CgroupHostView> {
	const membership = parseProcCgroup((await readOptional('/proc/self/cgroup')) ?? '')
	const mounts = parseCgroupMounts((await readOptional('/proc/self/mountinfo')) ?? '')
	let v2Controllers: string | undefined
	if (mounts.v2 && membership.v2 !== undefined) {
		const base = mounts.v2.mountPoint.replace(/\/+$/, '')
		const own = membership.v2 === '/' ? base : `${base}${membership.v2}`
		v2Controllers = await readOptional(`${own}/cgroup.controllers`)
	}
	return { membership, mounts, ...(v2Controllers === undefined ? {} : { v2Controllers }) }
}

export function planSandboxCgroups(
	view: CgroupHostView,
	needed: readonly LimitController[],
	name: string,
): CgroupPlan {
	return planCgroups({ ...view, needed, name })
}

export interface SandboxCgroups {
	/** `cgroup.procs` files the sandbox's first process must join. */
	readonly procsFiles: readonly string[]
	readonly dirs: readonly string[]
	/** Pids currently in the groups (deduplicated). */
	pids(): Promise<number[]>
	/** Kills every task still inside, then removes the groups. Idempotent. */
	remove(): Promise<void>
}

export interface RequestedLimits {
	readonly memoryLimitMb?: number
	readonly maxProcesses?: number
	/**
	 * Without limits, still create an unlimited `pids` group when one is available, purely so
	 * teardown can find (and kill) processes that escaped the process tree. Best effort: no group
	 * is not an error here, since nothing was promised.
	 */
	readonly trackOnly?: boolean
}

/**
 * Tasks the sandbox needs before user code runs: bwrap's two processes plus the agent's node
 * threads (main, V8 platform workers, libuv pool). `pids.max` counts threads, so this headroom is
 * added to `maxProcesses` rather than charged to the caller's budget.
 */
export const AGENT_TASK_HEADROOM = 24

const KILL_DEADLINE_MS = 5_000
const POLL_MS = 10

async function exists(path: string): Promise<boolean> {
	try {
		await access(path)
		return true
	} catch {
		return false
	}
}

async function groupPids(dirs: readonly string[]): Promise<number[]> {
	const pids = new Set<number>()
	for (const dir of dirs) {
		const text = await readOptional(`${dir}/cgroup.procs`)
		for (const line of (text ?? '').split('\n')) {
			const pid = Number(line.trim())
			if (line.trim() !== '' && Number.isSafeInteger(pid) && pid > 0) pids.add(pid)
		}
	}
	return [...pids]
}

function killQuietly(pid: number): void {
	try {
		process.kill(pid, 'SIGKILL')
	} catch {
		// Already gone (ESRCH) is the goal.
	}
}

async function enableV2Controllers(parent: string, controllers: readonly LimitController[]) {
	const enabled = ((await readOptional(`${parent}/cgroup.subtree_control`)) ?? '').split(/\s+/)
	const wanted = controllers.filter((controller) => !enabled.includes(controller))
	if (wanted.length === 0) return
	// Fails with EBUSY when the parent holds processes itself (the no-internal-process rule).
	await writeFile(`${parent}/cgroup.subtree_control`, wanted.map((c) => `+${c}`).join(' '))
}

/**
 * Creates the groups for `limits` under this process's own cgroups, or returns undefined when no
 * limit was asked for. Rejects with `CgroupLimitsUnavailableError` when a needed controller is
 * missing or cannot be set up — never silently unlimited.
 */
export async function createSandboxCgroups(
	name: string,
	limits: RequestedLimits,
	view?: CgroupHostView,
): Promise<SandboxCgroups | undefined> {
	const needed: LimitController[] = []
	if (limits.memoryLimitMb !== undefined) needed.push('memory')
	if (limits.maxProcesses !== undefined) needed.push('pids')
	const tracking = needed.length === 0 && limits.trackOnly === true
	if (needed.length === 0 && !tracking) return undefined
	const plan = planSandboxCgroups(
		view ?? (await readCgroupHostView()),
		tracking ? ['pids'] : needed,
		name,
	)
	if (!plan.ok) {
		if (tracking) return undefined
		throw new CgroupLimitsUnavailableError(plan.missing, plan.detail)
	}
	const values: CgroupLimitValues = {
		...(limits.memoryLimitMb === undefined ? {} : { memoryLimitMb: limits.memoryLimitMb }),
		...(limits.maxProcesses === undefined
			? {}
			: { pidsMax: limits.maxProcesses + AGENT_TASK_HEADROOM }),
	}
	const created: string[] = []
	const handle = sandboxCgroups(
		created,
		plan.groups.map((group) => `${group.dir}/cgroup.procs`),
	)
	try {
		for (const group of plan.groups) {
			if (group.version === 2) await enableV2Controllers(group.parent, group.controllers)
			await mkdir(group.dir)
			created.push(group.dir)
			for (const write of limitWrites(group, values)) {
				if (write.optional && !(await exists(write.file))) continue
				await writeFile(write.file, write.value)
			}
		}
	} catch (error) {
		await handle.remove().catch(() => undefined)
		if (tracking) return undefined
		if (error instanceof CgroupLimitsUnavailableError) throw error
		const detail = error instanceof Error ? error.message : String(error)
		throw new CgroupLimitsUnavailableError(needed, `setting up the cgroup failed: ${detail}`, {
			cause: error,
		})
	}
	return handle
}

/**
 * The groups of a sandbox created by another (possibly gone) host process, from the directories its
 * descriptor recorded: `remove()` kills what is inside and removes them, exactly as for our own.
 */
export function adoptSandboxCgroups(dirs: readonly string[]): SandboxCgroups {
	return sandboxCgroups(
		[...dirs],
		dirs.map((dir) => `${dir}/cgroup.procs`),
	)
}

function sandboxCgroups(dirs: string[], procsFiles: readonly string[]): SandboxCgroups {
	let removal: Promise<void> | undefined
	const remove = async () => {
		const deadline = Date.now() + KILL_DEADLINE_MS
		for (;;) {
			const pids = await groupPids(dirs)
			if (pids.length === 0) break
			for (const pid of pids) killQuietly(pid)
			if (Date.now() > deadline) break
			await sleep(POLL_MS)
		}
		const leftovers: string[] = []
		for (const dir of [...dirs].reverse()) {
			for (;;) {
				try {
					await rmdir(dir)
					break
				} catch (error) {
					const code = (error as NodeJS.ErrnoException).code
					if (code === 'ENOENT') break
					if (code !== 'EBUSY' || Date.now() > deadline) {
						leftovers.push(dir)
						break
					}
					for (const pid of await groupPids([dir])) killQuietly(pid)
					await sleep(POLL_MS)
				}
			}
		}
		if (leftovers.length > 0) throw new LocalSandboxCleanupError(leftovers)
	}
	return {
		procsFiles,
		dirs,
		pids: () => groupPids(dirs),
		remove: () => {
			removal ??= remove()
			return removal
		},
	}
}
