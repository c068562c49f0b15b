/**
 * The cgroup tree of one sandbox, as a pure function of the per-controller plan (`cgroup-layout.ts`)
 * and its limits — the host side of the contract with the agent:
 *
 *   <sandbox>/         memory, cpu, pids.max = N + agent headroom        (v1: every hierarchy)
 *   <sandbox>/agent/   v2 only: the leaf bwrap and the agent join (no internal processes)
 *   <sandbox>/work/    pids.max = N, owned by the sandbox's uid; every workload process lives here
 *
 * On v1 the per-command groups live under the freezer hierarchy's `<sandbox>/work/` (freeze, kill,
 * thaw), on v2 under the unified `<sandbox>/work/` (`cgroup.kill`). The host hands the agent a
 * read-only descriptor of each `work/` directory, described by `NAMZU_AGENT_WORKLOAD_CGROUPS`:
 * `perCommand: false` is a group every workload process joins, `perCommand: true` a directory under
 * which the agent creates one group per command, and `accounting: true` (v1 memory and cpuacct) a
 * directory where each command also gets a group, only to count what its tree used.
 */
import type {
	CgroupController,
	CgroupFileWrite,
	CgroupGroupPlan,
	CgroupLimitValues,
} from './cgroup-layout.js'
import { limitWrites } from './cgroup-layout.js'

export const WORKLOAD_GROUP = 'work'
export const AGENT_LEAF_GROUP = 'agent'
/** Variable naming the inherited `work/` descriptors for the agent. */
export const WORKLOAD_CGROUPS_VARIABLE = 'NAMZU_AGENT_WORKLOAD_CGROUPS'
/** The listener is fd 3; workload group descriptors follow it. */
export const FIRST_WORKLOAD_CGROUP_FD = 4

export interface CgroupOwner {
	readonly uid: number
	readonly gid: number
}

export interface WorkloadGroup {
	readonly dir: string
	readonly version: 1 | 2
	readonly perCommand: boolean
	/** A v1 counting hierarchy (memory, cpuacct): per-command groups read for what a command used. */
	readonly accounting?: boolean
}

/** One step of setting the tree up, in order. */
export type CgroupTreeStep =
	| { readonly kind: 'mkdir'; readonly dir: string }
	| { readonly kind: 'write'; readonly write: CgroupFileWrite }
	/** v2: add controllers to a parent's `cgroup.subtree_control` (only those not yet enabled). */
	| { readonly kind: 'enable'; readonly dir: string; readonly controllers: readonly string[] }
	| { readonly kind: 'chown'; readonly path: string }

export interface CgroupTreePlan {
	/** One chain per hierarchy: steps in a chain run in order, chains run side by side. */
	readonly chains: readonly (readonly CgroupTreeStep[])[]
	/** The `<sandbox>/` directories (removal takes their children with them). */
	readonly topDirs: readonly string[]
	/** `cgroup.procs` files bwrap's launcher joins before it starts. */
	readonly joinProcsFiles: readonly string[]
	readonly workloadGroups: readonly WorkloadGroup[]
}

export interface CgroupTreeInput {
	readonly groups: readonly CgroupGroupPlan[]
	/** This process's unified group: where per-command groups go when v1 has no freezer. */
	readonly v2Parent?: string
	readonly name: string
	/** Values for the `<sandbox>/` groups (pidsMax already includes the agent's headroom). */
	readonly values: CgroupLimitValues
	/** pids.max of `work/`; absent ⇒ no workload group is made (tracking-only sandboxes). */
	readonly workloadPidsMax?: number
}

/** Files of a `work/` group the sandbox's uid must own to create children and join it. */
function delegatedFiles(dir: string, version: 1 | 2): string[] {
	return version === 1
		? [dir, `${dir}/cgroup.procs`, `${dir}/tasks`]
		: [dir, `${dir}/cgroup.procs`, `${dir}/cgroup.subtree_control`, `${dir}/cgroup.threads`]
}

export function planCgroupTree(input: CgroupTreeInput): CgroupTreePlan {
	const chains: CgroupTreeStep[][] = []
	const topDirs: string[] = []
	const joinProcsFiles: string[] = []
	const workloadGroups: WorkloadGroup[] = []
	const workload = input.workloadPidsMax
	const pidsGroup = input.groups.find((group) => group.controllers.includes('pids'))
	// One per-command home: the unified hierarchy when the sandbox has a v2 group, else v1 freezer.
	const hasV2Group = input.groups.some((group) => group.version === 2)
	for (const group of input.groups) {
		const steps: CgroupTreeStep[] = []
		chains.push(steps)
		if (group.version === 2) steps.push(enableStep(group.parent, group.controllers))
		steps.push({ kind: 'mkdir', dir: group.dir })
		topDirs.push(group.dir)
		for (const write of limitWrites(group, input.values)) steps.push({ kind: 'write', write })
		const work = `${group.dir}/${WORKLOAD_GROUP}`
		const limitsPids = group.controllers.includes('pids')
		if (group.version === 2) {
			// No internal processes: the agent's leaf, and work/ beside it; pids must reach work/.
			if (workload !== undefined && limitsPids) steps.push(enableStep(group.dir, ['pids']))
			steps.push({ kind: 'mkdir', dir: `${group.dir}/${AGENT_LEAF_GROUP}` })
			joinProcsFiles.push(`${group.dir}/${AGENT_LEAF_GROUP}/cgroup.procs`)
			if (workload !== undefined) {
				steps.push(...workloadSteps(work, 2, limitsPids ? workload : undefined))
				// Moving a process between agent/ and work/<c> needs write access to their common
				// ancestor's cgroup.procs.
				steps.push({ kind: 'chown', path: `${group.dir}/cgroup.procs` })
				workloadGroups.push({ dir: work, version: 2, perCommand: true })
			}
			continue
		}
		const freezes = group.controllers.includes('freezer') && !hasV2Group
		// The agent never needs to be frozen with its commands: a freezer-only group is not joined.
		if (group.controllers.some((controller) => controller !== 'freezer')) {
			joinProcsFiles.push(`${group.dir}/cgroup.procs`)
		}
		const counts = group.controllers.some((c) => c === 'memory' || c === 'cpuacct')
		if (workload !== undefined && counts && group !== pidsGroup && !freezes) {
			// Each command gets a group here too, only to count what its tree used.
			steps.push(...workloadSteps(work, 1, undefined))
			workloadGroups.push({ dir: work, version: 1, perCommand: false, accounting: true })
			continue
		}
		if (workload === undefined || (group !== pidsGroup && !freezes)) continue
		steps.push(...workloadSteps(work, 1, group === pidsGroup ? workload : undefined))
		workloadGroups.push({ dir: work, version: 1, perCommand: freezes })
	}
	// v1 pids without a v1 freezer: per-command groups go to the unified hierarchy (cgroup.kill).
	const hasPerCommand = workloadGroups.some((group) => group.perCommand)
	if (workload !== undefined && !hasPerCommand && input.v2Parent !== undefined) {
		const dir = `${input.v2Parent}/${input.name}`
		const work = `${dir}/${WORKLOAD_GROUP}`
		const steps: CgroupTreeStep[] = []
		chains.push(steps)
		steps.push({ kind: 'mkdir', dir })
		topDirs.push(dir)
		steps.push({ kind: 'mkdir', dir: `${dir}/${AGENT_LEAF_GROUP}` })
		joinProcsFiles.push(`${dir}/${AGENT_LEAF_GROUP}/cgroup.procs`)
		steps.push(...workloadSteps(work, 2, undefined))
		steps.push({ kind: 'chown', path: `${dir}/cgroup.procs` })
		workloadGroups.push({ dir: work, version: 2, perCommand: true })
	}
	return { chains, topDirs, joinProcsFiles, workloadGroups }
}

function enableStep(dir: string, controllers: readonly string[]): CgroupTreeStep {
	// cpuacct and freezer are v1 names; v2 has their counters and cgroup.kill in every group.
	const real = controllers.filter(
		(controller) => controller !== 'cpuacct' && controller !== 'freezer',
	)
	return { kind: 'enable', dir, controllers: real }
}

function workloadSteps(dir: string, version: 1 | 2, pidsMax: number | undefined): CgroupTreeStep[] {
	const steps: CgroupTreeStep[] = [{ kind: 'mkdir', dir }]
	if (pidsMax !== undefined) {
		steps.push({
			kind: 'write',
			write: { file: `${dir}/pids.max`, value: String(pidsMax), optional: false },
		})
	}
	for (const path of delegatedFiles(dir, version)) steps.push({ kind: 'chown', path })
	return steps
}

export interface WorkloadCgroupFd {
	readonly fd: number
	readonly version: 1 | 2
	readonly perCommand: boolean
	readonly accounting?: boolean
}

/** Descriptor numbers (in the agent) for `groups`, in order, starting after the listener. */
export function workloadCgroupFds(groups: readonly WorkloadGroup[]): WorkloadCgroupFd[] {
	return groups.map((group, index) => ({
		fd: FIRST_WORKLOAD_CGROUP_FD + index,
		version: group.version,
		perCommand: group.perCommand,
		...(group.accounting ? { accounting: true } : {}),
	}))
}

/** The value of `NAMZU_AGENT_WORKLOAD_CGROUPS`. */
export function workloadCgroupsVariable(fds: readonly WorkloadCgroupFd[]): string {
	return JSON.stringify(
		fds.map((entry) => ({
			fd: entry.fd,
			version: entry.version,
			perCommand: entry.perCommand,
			...(entry.accounting ? { accounting: true } : {}),
		})),
	)
}

/**
 * v1 controllers worth adding to a plan: `cpuacct` beside a v1 `cpu` group with a quota (the usage
 * counter that shows the quota holding), and
 * `freezer` when the workload's pids group is v1 and no unified group exists (per-command groups).
 */
export function optionalControllersFor(
	groups: readonly CgroupGroupPlan[],
	options: { readonly cpuAccounting: boolean },
): CgroupController[] {
	const optional: CgroupController[] = []
	const v1 = groups.filter((group) => group.version === 1)
	const cpu = v1.find((group) => group.controllers.includes('cpu'))
	// Joining a v1 cpuacct group costs about a millisecond per sandbox; `cpuAccounting` decides.
	if (options.cpuAccounting && cpu && !cpu.controllers.includes('cpuacct')) optional.push('cpuacct')
	const pidsOnV1 = v1.some((group) => group.controllers.includes('pids'))
	const hasV2 = groups.some((group) => group.version === 2)
	if (pidsOnV1 && !hasV2 && !v1.some((group) => group.controllers.includes('freezer'))) {
		optional.push('freezer')
	}
	return optional
}
