/**
 * The OCI runtime `config.json` of one container sandbox, as a pure function of what the host
 * prepared: the image's root filesystem (read-only), the mounts in order, the unprivileged user,
 * the agent's command and environment, and the cgroup path the runtime nests under its own
 * cgroups. No capabilities, `noNewPrivileges`, the runtime's usual masked and read-only `/proc`
 * paths, and new pid, network (loopback only until `container-network.ts` gives it more), ipc,
 * uts, mount and cgroup namespaces.
 */
import type { OciSeccomp } from '../machine/seccomp/oci-seccomp.js'
import type { TmpfsSizes } from '../machine/spec/sandbox-limits.js'

export interface OciMount {
	readonly destination: string
	readonly type: string
	readonly source: string
	readonly options: readonly string[]
}

export interface OciBind {
	readonly source: string
	readonly target: string
	readonly readOnly: boolean
}

/** Where the agent's runtime files appear inside: under `/run`, a root-owned tmpfs. */
export const CONTAINER_RUNTIME_DIR = '/run/namzu'
export const CONTAINER_AGENT_NODE = `${CONTAINER_RUNTIME_DIR}/node`
export const CONTAINER_AGENT_BUNDLE = `${CONTAINER_RUNTIME_DIR}/agent.cjs`
export const CONTAINER_INIT = `${CONTAINER_RUNTIME_DIR}/init`
/** The image's shell copied unreadable, for the command the agent starts ahead. */
export const CONTAINER_SPARE_SHELL = `${CONTAINER_RUNTIME_DIR}/sh`
/** Where the agent binds its socket when the runtime cannot pass it a listener (gVisor). */
export const CONTAINER_SOCKET_DIR = `${CONTAINER_RUNTIME_DIR}/uds`
export const CONTAINER_SOCKET_PATH = `${CONTAINER_SOCKET_DIR}/agent.sock`
/** The workload's writable home, a tmpfs of its own under `/tmp` owned by the sandbox uid. */
export const CONTAINER_HOME_DIR = '/tmp/home'
export const CONTAINER_WORKSPACE = '/workspace'

export interface ContainerMountPlan {
	readonly tmpfs: TmpfsSizes
	readonly owner: { readonly uid: number; readonly gid: number }
	/** Host paths of the agent's node, the agent bundle, the init and the spare's shell. */
	readonly runtime: {
		readonly node: string
		readonly bundle: string
		readonly init?: string
		readonly spareShell?: string
	}
	/** A host directory bound at `CONTAINER_SOCKET_DIR` for the agent's socket (gVisor only). */
	readonly socketDir?: string
	/** The per-sandbox workspace directory on the host, bound at `/workspace`. */
	readonly workspace: string
	/** Directories of the image covered by an empty root-owned tmpfs, so mount points can be made. */
	readonly scaffolds: readonly string[]
	/** The layout's binds, parents before children. */
	readonly binds: readonly OciBind[]
	/** The network's files and bridge (`container-network.ts`), last so nothing covers them. */
	readonly networkBinds?: readonly OciBind[]
}

const NO_SUID_DEV = ['nosuid', 'nodev'] as const

function tmpfs(destination: string, options: readonly string[]): OciMount {
	return { destination, type: 'tmpfs', source: 'tmpfs', options }
}

function bind(source: string, destination: string, readOnly: boolean): OciMount {
	return {
		destination,
		type: 'bind',
		source,
		options: ['rbind', readOnly ? 'ro' : 'rw', ...NO_SUID_DEV],
	}
}

/** Every mount, in the order the runtime makes them (a parent before what is mounted inside it). */
export function containerMounts(plan: ContainerMountPlan): OciMount[] {
	const { uid, gid } = plan.owner
	const size = (bytes: number) => `size=${bytes}`
	return [
		{ destination: '/proc', type: 'proc', source: 'proc', options: ['nosuid', 'noexec', 'nodev'] },
		tmpfs('/dev', ['nosuid', 'strictatime', 'mode=755', 'size=65536k']),
		{
			destination: '/dev/pts',
			type: 'devpts',
			source: 'devpts',
			options: ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620'],
		},
		tmpfs('/dev/shm', [...NO_SUID_DEV, 'noexec', 'mode=1777', size(plan.tmpfs['/dev/shm'])]),
		{
			destination: '/dev/mqueue',
			type: 'mqueue',
			source: 'mqueue',
			options: ['nosuid', 'noexec', 'nodev'],
		},
		{
			destination: '/sys',
			type: 'sysfs',
			source: 'sysfs',
			options: ['nosuid', 'noexec', 'nodev', 'ro'],
		},
		tmpfs('/tmp', [...NO_SUID_DEV, 'mode=1777', size(plan.tmpfs['/tmp'])]),
		tmpfs(CONTAINER_HOME_DIR, [
			...NO_SUID_DEV,
			'mode=700',
			`uid=${uid}`,
			`gid=${gid}`,
			size(plan.tmpfs['/tmp']),
		]),
		tmpfs('/var/tmp', [...NO_SUID_DEV, 'mode=1777', size(plan.tmpfs['/var/tmp'])]),
		// Root's, 0755: the workload cannot replace what is bound below it.
		tmpfs('/run', [...NO_SUID_DEV, 'mode=755', size(plan.tmpfs['/run'])]),
		bind(plan.runtime.node, CONTAINER_AGENT_NODE, true),
		bind(plan.runtime.bundle, CONTAINER_AGENT_BUNDLE, true),
		...(plan.runtime.init === undefined ? [] : [bind(plan.runtime.init, CONTAINER_INIT, true)]),
		...(plan.runtime.spareShell === undefined
			? []
			: [bind(plan.runtime.spareShell, CONTAINER_SPARE_SHELL, true)]),
		...(plan.socketDir === undefined ? [] : [bind(plan.socketDir, CONTAINER_SOCKET_DIR, false)]),
		bind(plan.workspace, CONTAINER_WORKSPACE, false),
		...plan.scaffolds.map((dir) => tmpfs(dir, [...NO_SUID_DEV, 'mode=755', 'size=1m'])),
		...plan.binds.map((entry) => bind(entry.source, entry.target, entry.readOnly)),
		...(plan.networkBinds ?? []).map((entry) => bind(entry.source, entry.target, entry.readOnly)),
	]
}

/** The runtime's usual masks: nothing of the host's kernel state beyond what a process needs. */
export const MASKED_PATHS: readonly string[] = [
	'/proc/acpi',
	'/proc/asound',
	'/proc/kcore',
	'/proc/keys',
	'/proc/latency_stats',
	'/proc/timer_list',
	'/proc/timer_stats',
	'/proc/sched_debug',
	'/proc/scsi',
	'/sys/firmware',
	'/sys/devices/virtual/powercap',
]

export const READONLY_PATHS: readonly string[] = [
	'/proc/bus',
	'/proc/fs',
	'/proc/irq',
	'/proc/sys',
	'/proc/sysrq-trigger',
]

export interface OciConfigInput {
	readonly rootfs: string
	readonly hostname: string
	readonly user: { readonly uid: number; readonly gid: number }
	/** Program first. */
	readonly args: readonly string[]
	readonly env: Readonly<Record<string, string>>
	readonly cwd: string
	readonly mounts: readonly OciMount[]
	/** Relative: the runtime nests it under its own cgroups (the sandbox's, which it has joined). */
	readonly cgroupsPath: string
	readonly annotations?: Readonly<Record<string, string>>
	/** The sandbox's seccomp filter (`machine/seccomp/`); runsc applies it with `--oci-seccomp`. */
	readonly seccomp?: OciSeccomp
}

export const OCI_VERSION = '1.0.2'

export function buildOciConfig(input: OciConfigInput): Record<string, unknown> {
	const none: string[] = []
	return {
		ociVersion: OCI_VERSION,
		process: {
			terminal: false,
			user: { uid: input.user.uid, gid: input.user.gid, additionalGids: [input.user.gid] },
			args: [...input.args],
			env: Object.entries(input.env).map(([key, value]) => `${key}=${value}`),
			cwd: input.cwd,
			capabilities: {
				bounding: none,
				effective: none,
				inheritable: none,
				permitted: none,
				ambient: none,
			},
			noNewPrivileges: true,
		},
		root: { path: input.rootfs, readonly: true },
		hostname: input.hostname,
		mounts: input.mounts.map((mount) => ({ ...mount, options: [...mount.options] })),
		...(input.annotations === undefined ? {} : { annotations: { ...input.annotations } }),
		linux: {
			cgroupsPath: input.cgroupsPath,
			namespaces: ['pid', 'network', 'ipc', 'uts', 'mount', 'cgroup'].map((type) => ({ type })),
			maskedPaths: [...MASKED_PATHS],
			readonlyPaths: [...READONLY_PATHS],
			...(input.seccomp === undefined ? {} : { seccomp: input.seccomp }),
		},
	}
}
