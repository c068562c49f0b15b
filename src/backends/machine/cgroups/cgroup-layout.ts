/**
 * Where this host's cgroup controllers live and where a sandbox's groups go, as pure functions of
 * `/proc/self/cgroup`, `/proc/self/mountinfo` and the v2 `cgroup.controllers` text. Groups are
 * nested under this process's own cgroup so any limit the host itself runs under still applies.
 */

/** Controllers that enforce a limit: a host without one of them cannot bound the sandbox. */
export type LimitController = 'memory' | 'pids' | 'cpu'
/**
 * Every controller a sandbox uses: the limits, plus v1 `cpuacct` (the CPU usage counter) and v1
 * `freezer` (per-command groups that can be killed as a whole). cgroup v2 has both built in.
 */
export type CgroupController = LimitController | 'cpuacct' | 'freezer'

const V1_CONTROLLERS: readonly string[] = ['memory', 'pids', 'cpu', 'cpuacct', 'freezer']

export interface CgroupMount {
	readonly mountPoint: string
	/** Root of the hierarchy that the mount exposes (usually `/`). */
	readonly root: string
}

export interface CgroupMounts {
	readonly v2?: CgroupMount
	/** v1 hierarchies by controller name. */
	readonly v1: Readonly<Record<string, CgroupMount>>
}

export interface ProcCgroupMembership {
	/** Path in the unified (v2) hierarchy (`0::<path>`). */
	readonly v2?: string
	/** Path per v1 controller. */
	readonly v1: Readonly<Record<string, string>>
}

/** Parses `/proc/<pid>/cgroup` (`id:controllers:path` lines). */
export function parseProcCgroup(text: string): ProcCgroupMembership {
	const v1: Record<string, string> = {}
	let v2: string | undefined
	for (const line of text.split('\n')) {
		const match = /^(\d+):([^:]*):(.*)$/.exec(line.trim())
		if (!match) continue
		const [, id, controllers = '', path = '/'] = match
		if (id === '0' && controllers === '') {
			v2 = path
			continue
		}
		for (const controller of controllers.split(',')) {
			if (controller !== '' && !controller.startsWith('name=')) v1[controller] = path
		}
	}
	return { ...(v2 === undefined ? {} : { v2 }), v1 }
}

/** Undoes the octal escapes mountinfo uses for space, tab, newline and backslash. */
export function unescapeMountField(field: string): string {
	return field.replace(/\\([0-7]{3})/g, (_, octal: string) =>
		String.fromCharCode(Number.parseInt(octal, 8)),
	)
}

/** One cgroup hierarchy mount: v1 with its super options (controllers, `name=`), or v2. */
export interface CgroupHierarchyMount extends CgroupMount {
	readonly version: 1 | 2
	/**
	 * The super options without `rw`/`ro`: v1's controllers and flags (`cpu`, `name=systemd`,
	 * `favordynmods`), v2's flags (`nsdelegate`, `favordynmods`).
	 */
	readonly options: readonly string[]
}

/** Every cgroup and cgroup2 mount of `/proc/<pid>/mountinfo`, in order. */
export function parseCgroupHierarchies(mountinfo: string): CgroupHierarchyMount[] {
	const mounts: CgroupHierarchyMount[] = []
	for (const line of mountinfo.split('\n')) {
		const separator = line.indexOf(' - ')
		if (separator < 0) continue
		const before = line.slice(0, separator).split(' ')
		const after = line.slice(separator + 3).split(' ')
		const root = before[3]
		const mountPoint = before[4]
		const fsType = after[0]
		if (root === undefined || mountPoint === undefined) continue
		if (fsType !== 'cgroup2' && fsType !== 'cgroup') continue
		const mount = { mountPoint: unescapeMountField(mountPoint), root: unescapeMountField(root) }
		const options = (after[2] ?? '')
			.split(',')
			.filter((option) => option !== '' && option !== 'rw' && option !== 'ro')
		mounts.push({ ...mount, version: fsType === 'cgroup2' ? 2 : 1, options })
	}
	return mounts
}

/** Parses the cgroup and cgroup2 mounts out of `/proc/<pid>/mountinfo`. */
export function parseCgroupMounts(mountinfo: string): CgroupMounts {
	const v1: Record<string, CgroupMount> = {}
	let v2: CgroupMount | undefined
	for (const { version, options, mountPoint, root } of parseCgroupHierarchies(mountinfo)) {
		const mount = { mountPoint, root }
		if (version === 2) {
			v2 ??= mount
			continue
		}
		for (const option of options) {
			if (V1_CONTROLLERS.includes(option)) v1[option] ??= mount
		}
	}
	return { ...(v2 === undefined ? {} : { v2 }), v1 }
}

/** Directory of the group `path` (as /proc/self/cgroup names it) inside `mount`; undefined if not visible there. */
export function groupDirectory(mount: CgroupMount, path: string): string | undefined {
	let relative: string
	if (mount.root === '/') relative = path
	else if (path === mount.root) relative = '/'
	else if (path.startsWith(`${mount.root}/`)) relative = path.slice(mount.root.length)
	else return undefined
	const base = mount.mountPoint.replace(/\/+$/, '')
	return relative === '/' ? base : `${base}${relative}`
}

export interface CgroupGroupPlan {
	readonly version: 1 | 2
	/** The sandbox's own group directory (to create). */
	readonly dir: string
	/** Its parent (this process's group), whose `cgroup.subtree_control` v2 may need to enable. */
	readonly parent: string
	readonly controllers: readonly CgroupController[]
}

export type CgroupPlan =
	| {
			readonly ok: true
			readonly groups: readonly CgroupGroupPlan[]
			/** This process's group in the unified hierarchy, when one is mounted and visible. */
			readonly v2Parent?: string
	  }
	| { readonly ok: false; readonly missing: readonly CgroupController[]; readonly detail: string }

export interface CgroupPlanInput {
	readonly needed: readonly CgroupController[]
	/** Placed in a v1 hierarchy when one is mounted, else left out (never reported missing). */
	readonly optional?: readonly CgroupController[]
	readonly membership: ProcCgroupMembership
	readonly mounts: CgroupMounts
	/** Contents of `cgroup.controllers` of this process's v2 group, when there is one. */
	readonly v2Controllers?: string
	/** Name of the sandbox's group (created under this process's group). */
	readonly name: string
}

/**
 * Chooses, per controller, the unified hierarchy when it offers the controller, else a v1 hierarchy
 * that has it. A controller neither offers is reported missing, never skipped.
 */
export function planCgroups(input: CgroupPlanInput): CgroupPlan {
	const v2Available = new Set((input.v2Controllers ?? '').split(/\s+/).filter((c) => c !== ''))
	const v2Parent =
		input.mounts.v2 && input.membership.v2 !== undefined
			? groupDirectory(input.mounts.v2, input.membership.v2)
			: undefined
	const v2Controllers: CgroupController[] = []
	const v1Groups: CgroupGroupPlan[] = []
	const missing: CgroupController[] = []
	const optional = input.optional ?? []
	for (const controller of [...input.needed, ...optional]) {
		const isOptional = !input.needed.includes(controller)
		if (!isOptional && v2Parent !== undefined && v2Available.has(controller)) {
			v2Controllers.push(controller)
			continue
		}
		const mount = input.mounts.v1[controller]
		const path = input.membership.v1[controller]
		const parent = mount && path !== undefined ? groupDirectory(mount, path) : undefined
		if (parent === undefined) {
			if (!isOptional) missing.push(controller)
			continue
		}
		const dir = `${parent}/${input.name}`
		const shared = v1Groups.findIndex((group) => group.dir === dir)
		const existing = v1Groups[shared]
		// Co-mounted controllers (one hierarchy) share one group directory.
		if (existing)
			v1Groups[shared] = { ...existing, controllers: [...existing.controllers, controller] }
		else v1Groups.push({ version: 1, dir, parent, controllers: [controller] })
	}
	if (missing.length > 0) {
		const v2Note = input.mounts.v2
			? `cgroup2 at ${input.mounts.v2.mountPoint} offers [${[...v2Available].join(' ')}]`
			: 'no cgroup2 mount'
		const v1Note = `v1 hierarchies: [${Object.keys(input.mounts.v1).join(' ')}]`
		return { ok: false, missing, detail: `${v2Note}; ${v1Note}` }
	}
	const groups: CgroupGroupPlan[] = []
	if (v2Parent !== undefined && v2Controllers.length > 0) {
		groups.push({
			version: 2,
			dir: `${v2Parent}/${input.name}`,
			parent: v2Parent,
			controllers: v2Controllers,
		})
	}
	groups.push(...v1Groups)
	return { ok: true, groups, ...(v2Parent === undefined ? {} : { v2Parent }) }
}

export interface CgroupLimitValues {
	readonly memoryLimitMb?: number
	/** Already including any headroom the caller adds for the agent itself. */
	readonly pidsMax?: number
	/** v1 `cpu.shares`. */
	readonly cpuShares?: number
	/** v2 `cpu.weight`. */
	readonly cpuWeight?: number
	/** CFS quota per `cpuPeriodUs`; absent ⇒ no quota. */
	readonly cpuQuotaUs?: number
	readonly cpuPeriodUs?: number
}

export interface CgroupFileWrite {
	readonly file: string
	readonly value: string
	/** Skipped when the file does not exist (e.g. swap accounting off). */
	readonly optional: boolean
}

/** Files to write, in order, to apply `limits` to `group`. memsw follows the plain limit (it must be ≥ it). */
export function limitWrites(group: CgroupGroupPlan, limits: CgroupLimitValues): CgroupFileWrite[] {
	const writes: CgroupFileWrite[] = []
	for (const controller of group.controllers) {
		if (controller === 'memory' && limits.memoryLimitMb !== undefined) {
			const bytes = String(limits.memoryLimitMb * 1024 * 1024)
			if (group.version === 1) {
				writes.push({ file: `${group.dir}/memory.limit_in_bytes`, value: bytes, optional: false })
				writes.push({
					file: `${group.dir}/memory.memsw.limit_in_bytes`,
					value: bytes,
					optional: true,
				})
			} else {
				writes.push({ file: `${group.dir}/memory.max`, value: bytes, optional: false })
				writes.push({ file: `${group.dir}/memory.swap.max`, value: '0', optional: true })
			}
		}
		if (controller === 'pids' && limits.pidsMax !== undefined) {
			writes.push({ file: `${group.dir}/pids.max`, value: String(limits.pidsMax), optional: false })
		}
		if (controller === 'cpu') writes.push(...cpuWrites(group, limits))
	}
	return writes
}

/** CFS period the `cpuLimit` quota is expressed in. */
export const CPU_PERIOD_US = 100_000

/** `cpu.cfs_quota_us` (v1) / the first field of `cpu.max` (v2) for `cpuLimit` cores. */
export function cpuQuotaUs(cpuLimit: number): number {
	return Math.max(1000, Math.round(cpuLimit * CPU_PERIOD_US))
}

function cpuWrites(group: CgroupGroupPlan, limits: CgroupLimitValues): CgroupFileWrite[] {
	const write = (name: string, value: string): CgroupFileWrite => ({
		file: `${group.dir}/${name}`,
		value,
		optional: false,
	})
	const period = limits.cpuPeriodUs ?? CPU_PERIOD_US
	const quota = limits.cpuQuotaUs
	if (group.version === 1) {
		return [
			...(limits.cpuShares === undefined ? [] : [write('cpu.shares', String(limits.cpuShares))]),
			...(quota === undefined
				? []
				: [write('cpu.cfs_period_us', String(period)), write('cpu.cfs_quota_us', String(quota))]),
		]
	}
	return [
		...(limits.cpuWeight === undefined ? [] : [write('cpu.weight', String(limits.cpuWeight))]),
		...(quota === undefined ? [] : [write('cpu.max', `${quota} ${period}`)]),
	]
}
