/**
 * Creates, fills and removes one sandbox's cgroups (the thin I/O shell over `cgroup-layout.ts`).
 * The launcher joins the returned `procsFiles` before bwrap starts; `remove()` kills whatever is
 * still inside (v1 has no `cgroup.kill`) and removes the groups.
 */

import { closeSync, constants, type Dirent, openSync } from 'node:fs'
import { access, chown, mkdir, readdir, rmdir, writeFile } from 'node:fs/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import { POLL_INTERVAL_MS, pollUntil } from '../../../common/poll-until.js'
import { readIfPresent } from '../../../common/read-if-present.js'
import { CgroupLimitsUnavailableError, LocalSandboxCleanupError } from '../machine-errors.js'
import {
	type CgroupController,
	type CgroupLimitValues,
	type CgroupMounts,
	type CgroupPlan,
	CPU_PERIOD_US,
	cpuQuotaUs,
	type LimitController,
	type ProcCgroupMembership,
	parseCgroupMounts,
	parseProcCgroup,
	planCgroups,
} from './cgroup-layout.js'
import { parseOomKillCount } from './guest-exit.js'
import { DefaultLimitsUnavailableError } from './limit-errors.js'
import {
	AGENT_LEAF_GROUP,
	type CgroupOwner,
	type CgroupTreeStep,
	optionalControllersFor,
	planCgroupTree,
	type WorkloadGroup,
} from './workload-cgroups.js'

export interface CgroupHostView {
	readonly membership: ProcCgroupMembership
	readonly mounts: CgroupMounts
	readonly v2Controllers?: string
}

/** What this process can see of the cgroup hierarchies. */
export async function readCgroupHostView(): Promise<CgroupHostView> {
	const membership = parseProcCgroup((await readIfPresent('/proc/self/cgroup')) ?? '')
	const mounts = parseCgroupMounts((await readIfPresent('/proc/self/mountinfo')) ?? '')
	let v2Controllers: string | undefined
	if (mounts.v2 && membership.v2 !== undefined) {
		const base = mounts.v2.mountPoint.replace(/\/+$/, '')
		const own = membership.v2 === '/' ? base : `${base}${membership.v2}`
		v2Controllers = await readIfPresent(`${own}/cgroup.controllers`)
	}
	return { membership, mounts, ...(v2Controllers === undefined ? {} : { v2Controllers }) }
}

export function planSandboxCgroups(
	view: CgroupHostView,
	needed: readonly CgroupController[],
	name: string,
): CgroupPlan {
	return planCgroups({ ...view, needed, name })
}

export interface SandboxCgroups {
	/** `cgroup.procs` files the sandbox's first process must join. */
	readonly procsFiles: readonly string[]
	/** The `<sandbox>/` directories (recorded for kept-alive teardown; children go with them). */
	readonly dirs: readonly string[]
	/** The `work/` groups handed to the agent as descriptors, in descriptor order. */
	readonly workloadGroups: readonly WorkloadGroup[]
	/** Pids currently anywhere in the groups, children included (deduplicated). */
	pids(): Promise<number[]>
	/** Moves `pid` (and its threads) into the sandbox's own groups, beside the agent. */
	join(pid: number): Promise<void>
	/** CPU time the sandbox has used, in nanoseconds, when an accounting group exists. */
	cpuUsageNs(): Promise<number | undefined>
	/**
	 * OOM kills counted in the group the agent lives in (v1 `<sandbox>/memory.oom_control`, v2
	 * `<sandbox>/agent/memory.events`); undefined without a memory group or when unreadable.
	 */
	oomKills(): Promise<number | undefined>
	/** Kills every task still inside (thawing frozen groups first), then removes the tree. Idempotent. */
	remove(): Promise<void>
}

/** `backend.defaultLimits`: refuse (`'required'`) or start unbounded (`'best-effort'`) where the defaults cannot be enforced. */
export type DefaultLimitsMode = 'required' | 'best-effort'

export interface RequestedLimits {
	readonly memoryLimitMb?: number
	/** What the workload may hold; the sandbox's own group gets `AGENT_TASK_HEADROOM` on top. */
	readonly maxProcesses?: number
	/** Cores, enforced as a CFS quota. */
	readonly cpuLimit?: number
	/** v1 `cpu.shares` / v2 `cpu.weight`, written explicitly whenever set. */
	readonly cpuShares?: number
	readonly cpuWeight?: number
	/**
	 * Which controllers only carry defaults (nobody asked for them): when the host cannot enforce
	 * those, `defaultLimits` decides between `DefaultLimitsUnavailableError` (`required`, the
	 * default) and dropping them (`best-effort`). Anything not listed was asked for and refuses with
	 * `CgroupLimitsUnavailableError`.
	 */
	readonly defaultsOnly?: readonly LimitController[]
	readonly defaultLimits?: DefaultLimitsMode
	/** Owner of the `work/` groups (the sandbox's host uid); default this process's uid/gid. */
	readonly workloadOwner?: CgroupOwner
	/**
	 * Without limits, still create an unlimited `pids` group when one is available, purely so
	 * teardown can find (and kill) processes that escaped the process tree. Best effort: no group
	 * is not an error here, since nothing was promised.
	 */
	readonly trackOnly?: boolean
	/**
	 * Told the `<sandbox>/` directories before any of them is made, so a host that dies midway has
	 * them on record (`host-claims.ts`).
	 */
	readonly recordDirs?: (dirs: readonly string[]) => Promise<void>
}

/**
 * Tasks the sandbox needs besides its workload: bwrap's two processes, the agent's node threads
 * (main, V8 platform workers, libuv pool) and slirp4netns under allow-all. `pids.max` counts
 * threads, so the workload's `work/` group gets exactly `maxProcesses` and the sandbox's group this
 * much more.
 */
export const AGENT_TASK_HEADROOM = 24

const KILL_DEADLINE_MS = 5_000

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
		const text = await readIfPresent(`${dir}/cgroup.procs`)
		for (const line of (text ?? '').split('\n')) {
			const pid = Number(line.trim())
			if (line.trim() !== '' && Number.isSafeInteger(pid) && pid > 0) pids.add(pid)
		}
	}
	return [...pids]
}

/** `dir` and every group below it, deepest first (the order they can be removed in). */
async function groupTree(dir: string): Promise<string[]> {
	let entries: Dirent[]
	try {
		entries = await readdir(dir, { withFileTypes: true })
	} catch {
		return []
	}
	const below: string[] = []
	for (const entry of entries) {
		if (entry.isDirectory()) below.push(...(await groupTree(`${dir}/${entry.name}`)))
	}
	return [...below, dir]
}

async function treeOf(dirs: readonly string[]): Promise<string[]> {
	const all: string[] = []
	for (const dir of dirs) all.push(...(await groupTree(dir)))
	return all
}

/** A frozen v1 group holds SIGKILL pending until thawed. */
async function thaw(dirs: readonly string[]): Promise<void> {
	for (const dir of dirs) {
		const state = await readIfPresent(`${dir}/freezer.state`)
		if (state !== undefined && state.trim() !== 'THAWED') {
			await writeFile(`${dir}/freezer.state`, 'THAWED').catch(() => undefined)
		}
	}
}

function killQuietly(pid: number): void {
	try {
		process.kill(pid, 'SIGKILL')
	} catch {
		// Already gone (ESRCH) is the goal.
	}
}

async function enableV2Controllers(dir: string, controllers: readonly string[]) {
	const enabled = ((await readIfPresent(`${dir}/cgroup.subtree_control`)) ?? '').split(/\s+/)
	const wanted = controllers.filter((controller) => !enabled.includes(controller))
	if (wanted.length === 0) return
	// Fails with EBUSY when the group holds processes itself (the no-internal-process rule).
	await writeFile(`${dir}/cgroup.subtree_control`, wanted.map((c) => `+${c}`).join(' '))
}

function neededControllers(limits: RequestedLimits): LimitController[] {
	const needed: LimitController[] = []
	if (limits.memoryLimitMb !== undefined) needed.push('memory')
	if (limits.maxProcesses !== undefined) needed.push('pids')
	const cpu = limits.cpuLimit ?? limits.cpuShares ?? limits.cpuWeight
	if (cpu !== undefined) needed.push('cpu')
	return needed
}

/** The limits without the controllers in `dropped` (best-effort defaults the host cannot enforce). */
function without(limits: RequestedLimits, dropped: readonly string[]): RequestedLimits {
	const { memoryLimitMb, maxProcesses, cpuLimit, cpuShares, cpuWeight, ...rest } = limits
	return {
		...rest,
		...(dropped.includes('memory') || memoryLimitMb === undefined ? {} : { memoryLimitMb }),
		...(dropped.includes('pids') || maxProcesses === undefined ? {} : { maxProcesses }),
		...(dropped.includes('cpu')
			? {}
			: {
					...(cpuLimit === undefined ? {} : { cpuLimit }),
					...(cpuShares === undefined ? {} : { cpuShares }),
					...(cpuWeight === undefined ? {} : { cpuWeight }),
				}),
	}
}

function limitValues(limits: RequestedLimits): CgroupLimitValues {
	return {
		...(limits.memoryLimitMb === undefined ? {} : { memoryLimitMb: limits.memoryLimitMb }),
		...(limits.maxProcesses === undefined
			? {}
			: { pidsMax: limits.maxProcesses + AGENT_TASK_HEADROOM }),
		...(limits.cpuShares === undefined ? {} : { cpuShares: limits.cpuShares }),
		...(limits.cpuWeight === undefined ? {} : { cpuWeight: limits.cpuWeight }),
		...(limits.cpuLimit === undefined
			? {}
			: { cpuQuotaUs: cpuQuotaUs(limits.cpuLimit), cpuPeriodUs: CPU_PERIOD_US }),
	}
}

/** A refusal for `controllers` that could not be set up: the caller's, or only defaults. */
function refusal(
	limits: RequestedLimits,
	controllers: readonly string[],
	detail: string,
	cause?: unknown,
): Error {
	const defaults: readonly string[] = limits.defaultsOnly ?? []
	const asked = controllers.filter((controller) => !defaults.includes(controller))
	const options = cause === undefined ? {} : { cause }
	if (asked.length > 0) return new CgroupLimitsUnavailableError(asked, detail, options)
	return new DefaultLimitsUnavailableError(controllers, detail, options)
}

/**
 * Creates the cgroup tree for `limits` under this process's own cgroups (`workload-cgroups.ts`),
 * or returns undefined when nothing is to be enforced. Rejects with `CgroupLimitsUnavailableError`
 * when a limit the caller asked for cannot be set up, and with `DefaultLimitsUnavailableError` when
 * only defaults cannot (unless `defaultLimits: 'best-effort'`) — never silently unlimited.
 */
export async function createSandboxCgroups(
	name: string,
	limits: RequestedLimits,
	view?: CgroupHostView,
): Promise<SandboxCgroups | undefined> {
	const hostView = view ?? (await readCgroupHostView())
	const bestEffort = limits.defaultLimits === 'best-effort'
	const droppable = (controllers: readonly string[]) =>
		bestEffort && controllers.every((c) => (limits.defaultsOnly ?? []).some((d) => d === c))
	let effective = limits
	let needed = neededControllers(effective)
	const tracking = needed.length === 0 && limits.trackOnly === true
	if (needed.length === 0 && !tracking) return undefined
	let plan = planSandboxCgroups(hostView, tracking ? ['pids'] : needed, name)
	if (!plan.ok) {
		if (tracking) return undefined
		const missing = plan.missing
		const stillNeeded = needed.filter((controller) => !missing.includes(controller))
		if (!droppable(missing)) throw refusal(limits, missing, plan.detail)
		effective = without(limits, missing)
		needed = stillNeeded
		if (needed.length === 0) return undefined
		plan = planSandboxCgroups(hostView, needed, name)
		if (!plan.ok) throw refusal(limits, plan.missing, plan.detail)
	}
	const optional = optionalControllersFor(plan.groups, {
		// Every command's CPU time is reported (exec accounting): cpuacct always, not only under a quota.
		cpuAccounting: true,
	})
	if (optional.length > 0) {
		// A tracking-only plan's one group (pids) stays needed beside the optional ones.
		const required: readonly CgroupController[] = tracking ? ['pids'] : needed
		const withOptional = planCgroups({ ...hostView, needed: required, optional, name })
		if (withOptional.ok) plan = withOptional
	}
	const tree = planCgroupTree({
		groups: plan.groups,
		...(plan.v2Parent === undefined ? {} : { v2Parent: plan.v2Parent }),
		name,
		values: limitValues(effective),
		...(effective.maxProcesses === undefined ? {} : { workloadPidsMax: effective.maxProcesses }),
	})
	const memory = plan.groups.find((group) => group.controllers.includes('memory'))
	const oomCounter =
		memory === undefined
			? undefined
			: memory.version === 1
				? `${memory.dir}/memory.oom_control`
				: `${memory.dir}/${AGENT_LEAF_GROUP}/memory.events`
	const handle = sandboxCgroups(
		[...tree.topDirs],
		tree.joinProcsFiles,
		tree.workloadGroups,
		oomCounter,
	)
	await limits.recordDirs?.(tree.topDirs)
	try {
		// Hierarchies are independent: set them up side by side.
		const results = await Promise.allSettled(
			tree.chains.map((chain) => applyChain(chain, limits.workloadOwner)),
		)
		const failed = results.find((result) => result.status === 'rejected')
		if (failed) throw failed.reason
	} catch (error) {
		await handle.remove().catch(() => undefined)
		if (tracking) return undefined
		const detail = `setting up the cgroup failed: ${error instanceof Error ? error.message : String(error)}`
		if (droppable(needed)) return undefined
		throw refusal(limits, needed, detail, error)
	}
	return handle
}

async function applyChain(steps: readonly CgroupTreeStep[], owner: CgroupOwner | undefined) {
	const uid = owner?.uid ?? process.getuid?.()
	const gid = owner?.gid ?? process.getgid?.()
	const chownNeeded = uid !== undefined && gid !== undefined && uid !== process.getuid?.()
	for (const step of steps) {
		if (step.kind === 'mkdir') await mkdir(step.dir)
		else if (step.kind === 'enable') await enableV2Controllers(step.dir, step.controllers)
		else if (step.kind === 'write') {
			if (step.write.optional && !(await exists(step.write.file))) continue
			await writeFile(step.write.file, step.write.value)
		} else if (chownNeeded && (await exists(step.path))) await chown(step.path, uid, gid)
	}
}

/**
 * The groups of a sandbox created by another (possibly gone) host process, from the directories its
 * descriptor recorded: `remove()` kills what is inside and removes them, exactly as for our own.
 */
export function adoptSandboxCgroups(dirs: readonly string[]): SandboxCgroups {
	return sandboxCgroups(
		[...dirs],
		dirs.map((dir) => `${dir}/cgroup.procs`),
		[],
	)
}

async function readCpuUsageNs(dirs: readonly string[]): Promise<number | undefined> {
	for (const dir of dirs) {
		const v1 = await readIfPresent(`${dir}/cpuacct.usage`)
		if (v1 !== undefined) return Number(v1.trim())
		const stat = await readIfPresent(`${dir}/cpu.stat`)
		const usec = stat === undefined ? undefined : /^usage_usec (\d+)$/m.exec(stat)?.[1]
		if (usec !== undefined) return Number(usec) * 1000
	}
	return undefined
}

function sandboxCgroups(
	dirs: string[],
	procsFiles: readonly string[],
	workloadGroups: readonly WorkloadGroup[],
	oomCounter?: string,
): SandboxCgroups {
	let removal: Promise<void> | undefined
	const remove = async () => {
		const deadlineAt = performance.now() + KILL_DEADLINE_MS
		await pollUntil(async () => {
			const tree = await treeOf(dirs)
			await thaw(tree)
			const pids = await groupPids(tree)
			for (const pid of pids) killQuietly(pid)
			return pids.length === 0
		}, deadlineAt)
		const leftovers: string[] = []
		for (const dir of await treeOf([...dirs].reverse())) {
			for (;;) {
				try {
					await rmdir(dir)
					break
				} catch (error) {
					const code = (error as NodeJS.ErrnoException).code
					if (code === 'ENOENT') break
					if (code !== 'EBUSY' || performance.now() > deadlineAt) {
						leftovers.push(dir)
						break
					}
					await thaw([dir])
					for (const pid of await groupPids([dir])) killQuietly(pid)
					await sleep(POLL_INTERVAL_MS)
				}
			}
		}
		if (leftovers.length > 0) throw new LocalSandboxCleanupError(leftovers)
	}
	return {
		procsFiles,
		dirs,
		workloadGroups,
		pids: async () => groupPids(await treeOf(dirs)),
		join: async (pid) => {
			for (const file of procsFiles) await writeFile(file, String(pid))
		},
		cpuUsageNs: () => readCpuUsageNs(dirs),
		oomKills: async () => {
			const text = oomCounter === undefined ? undefined : await readIfPresent(oomCounter)
			return text === undefined ? undefined : parseOomKillCount(text)
		},
		remove: () => {
			removal ??= remove()
			return removal
		},
	}
}

/**
 * Read-only directory descriptors of the `work/` groups, in order, for the agent to inherit (the
 * caller closes them once the child has its copies). Opened by the host, so the agent needs no
 * path to the cgroup filesystem.
 */
export function openWorkloadGroupFds(groups: readonly WorkloadGroup[]): number[] {
	const fds: number[] = []
	try {
		for (const group of groups)
			fds.push(openSync(group.dir, constants.O_RDONLY | constants.O_DIRECTORY))
	} catch (error) {
		closeFds(fds)
		throw error
	}
	return fds
}

export function closeFds(fds: readonly number[]): void {
	for (const fd of fds) {
		try {
			closeSync(fd)
		} catch {
			// Already closed.
		}
	}
}
