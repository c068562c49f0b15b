/**
 * The root a bubblewrap sandbox sees, as an ordered list of mounts: a fresh tmpfs with read-only
 * binds of what programs need (`/usr`, the `/bin`-style entries as the host has them, `/etc` with
 * its secrets masked, the CPU topology of `/sys`), private `/tmp`, `/run` and `/var/tmp`, the
 * agent's runtime at a neutral path, the workspace read-write at its absolute path, then every
 * mask, and finally the root itself made read-only. Nothing else of the host exists inside: not
 * `/root`, `/home`, `/var`, `/srv`, `/mnt`, `/opt`, the state directory or the checkout the host
 * runs from. Every writable tmpfs (`/tmp`, `/run`, `/var/tmp`, `/dev/shm`) is sized inside the
 * memory limit when sizes are given (`sandbox-limits.ts` plans them). Pure: the host facts come in
 * (`host-root-layout.ts` reads them).
 */
import { isWithin } from '../machine/path-containment.js'
import type { TmpfsMount, TmpfsSizes } from '../machine/spec/sandbox-limits.js'

/** Where the agent's private copies are bound inside (never on the workload's PATH). */
export const AGENT_RUNTIME_DIR = '/.namzu'
export const AGENT_NODE_PATH = `${AGENT_RUNTIME_DIR}/node`
export const AGENT_BUNDLE_PATH = `${AGENT_RUNTIME_DIR}/agent.cjs`
/** The shell a command started ahead waits in (unreadable inside, like the agent's node). */
export const SPARE_SHELL_PATH = `${AGENT_RUNTIME_DIR}/sh`

/** Top-level entries bound as the host has them: a real directory is bound, a symlink recreated. */
export const SYSTEM_ENTRIES = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'] as const

/**
 * `/etc` entries that hold secrets or host credentials (relative to `/etc`). `ssh/ssh_host_*` is
 * matched by prefix at probe time. Masked only when present.
 */
export const ETC_SECRET_ENTRIES = [
	'shadow',
	'shadow-',
	'gshadow',
	'gshadow-',
	'sudoers',
	'sudoers.d',
	'ssl/private',
	'security/opasswd',
	'krb5.keytab',
	'machine-id',
	'kubernetes',
	'docker',
	'rancher',
	'libvirt',
] as const
export const SSH_HOST_KEY_PREFIX = 'ssh/ssh_host_'

/** Private writable tmpfs mounts (their sizes are the limits' concern). */
export const PRIVATE_TMPFS = ['/tmp', '/run', '/var/tmp'] as const satisfies readonly TmpfsMount[]
/** bwrap's `/dev/shm` is a directory of its unsized `/dev`: a sized root gets a tmpfs of its own. */
export const DEV_SHM = '/dev/shm' satisfies TmpfsMount
/** The only part of /sys inside: CPU counting (`nproc`, `os.cpus()`, `os.cpu_count()`) reads it. */
export const SYS_CPU_DIR = '/sys/devices/system/cpu'

export type SystemEntry =
	| { readonly path: string; readonly kind: 'dir' }
	| { readonly path: string; readonly kind: 'symlink'; readonly target: string }

/** A host path to hide: a file gets an empty read-only file over it, a directory an empty tmpfs. */
export interface MaskTarget {
	readonly path: string
	readonly kind: 'file' | 'dir'
}

/** A host source bound at `target` inside (the same path unless the host had to stage it). */
export interface BindSource {
	readonly source: string
	readonly target: string
}

export interface HostRootLayout {
	/** Which of `SYSTEM_ENTRIES` the host has, and how. */
	readonly systemEntries: readonly SystemEntry[]
	/** The `/etc` secrets present on this host (symlinks already resolved to what they expose). */
	readonly etcSecrets: readonly MaskTarget[]
	/** Whether `/sys/devices/system/cpu` exists. */
	readonly sysCpu: boolean
}

export interface SandboxRootInput {
	readonly layout: HostRootLayout
	readonly workspace: BindSource
	/** Writable home created inside the private /tmp. */
	readonly homeDir: string
	/** Host files of the runtime cache. */
	readonly runtime: {
		readonly agentNode: string
		readonly agentBundle: string
		/** An empty read-only file, bound over masked files. */
		readonly emptyFile: string
		/** The unreadable shell for spares; not bound when absent. */
		readonly spareShell?: string
	}
	/** Extra read-only binds: `readOnlyPaths`, the workload's node when outside /usr, DNS config. */
	readonly readOnly: readonly BindSource[]
	/** Resolved `hiddenPaths`. */
	readonly hidden: readonly MaskTarget[]
	/** Byte sizes of the writable tmpfs mounts; unsized (and no `/dev/shm` of its own) when absent. */
	readonly tmpfsSizes?: TmpfsSizes
}

export type RootMount =
	| { readonly kind: 'tmpfs-root' }
	| { readonly kind: 'ro-bind'; readonly source: string; readonly target: string }
	| { readonly kind: 'bind'; readonly source: string; readonly target: string }
	| { readonly kind: 'symlink'; readonly linkTarget: string; readonly path: string }
	| { readonly kind: 'dev'; readonly path: '/dev' }
	| { readonly kind: 'proc'; readonly path: '/proc' }
	/** A private writable tmpfs, of at most `sizeBytes` when set. */
	| { readonly kind: 'tmpfs'; readonly path: string; readonly sizeBytes?: number }
	| { readonly kind: 'dir'; readonly path: string }
	/** An empty tmpfs remounted read-only: hides a directory. */
	| { readonly kind: 'empty-dir'; readonly path: string }
	/** An empty read-only file bound over it: hides a file. */
	| { readonly kind: 'empty-file'; readonly source: string; readonly path: string }
	| { readonly kind: 'remount-ro-root' }

export interface SandboxRootPlan {
	readonly mounts: readonly RootMount[]
	/** Every path masked (secrets of /etc and hiddenPaths), for reports. */
	readonly masked: readonly string[]
}

const MIB = 1024 * 1024

/** Targets a mask can cover: only what some bind exposes (anything else is absent already). */
function exposedTargets(mounts: readonly RootMount[]): string[] {
	const targets: string[] = []
	for (const mount of mounts) {
		if (mount.kind === 'ro-bind' || mount.kind === 'bind') targets.push(mount.target)
	}
	return targets
}

function maskMount(mask: MaskTarget, emptyFile: string): RootMount {
	return mask.kind === 'file'
		? { kind: 'empty-file', source: emptyFile, path: mask.path }
		: { kind: 'empty-dir', path: mask.path }
}

export function planSandboxRoot(input: SandboxRootInput): SandboxRootPlan {
	const mounts: RootMount[] = [
		{ kind: 'tmpfs-root' },
		{ kind: 'ro-bind', source: '/usr', target: '/usr' },
	]
	for (const entry of input.layout.systemEntries) {
		mounts.push(
			entry.kind === 'symlink'
				? { kind: 'symlink', linkTarget: entry.target, path: entry.path }
				: { kind: 'ro-bind', source: entry.path, target: entry.path },
		)
	}
	mounts.push({ kind: 'ro-bind', source: '/etc', target: '/etc' })
	const sizes = input.tmpfsSizes
	const tmpfs = (path: TmpfsMount): RootMount =>
		sizes === undefined ? { kind: 'tmpfs', path } : { kind: 'tmpfs', path, sizeBytes: sizes[path] }
	mounts.push({ kind: 'dev', path: '/dev' })
	if (sizes !== undefined) mounts.push(tmpfs(DEV_SHM))
	mounts.push({ kind: 'proc', path: '/proc' })
	if (input.layout.sysCpu)
		mounts.push({ kind: 'ro-bind', source: SYS_CPU_DIR, target: SYS_CPU_DIR })
	// A read-only bind does not stop connect() on a unix socket, and /run is where the host's
	// daemons keep theirs: every writable place is a private tmpfs instead.
	for (const path of PRIVATE_TMPFS) mounts.push(tmpfs(path))
	mounts.push({ kind: 'dir', path: input.homeDir })
	mounts.push({ kind: 'ro-bind', source: input.runtime.agentNode, target: AGENT_NODE_PATH })
	mounts.push({ kind: 'ro-bind', source: input.runtime.agentBundle, target: AGENT_BUNDLE_PATH })
	if (input.runtime.spareShell !== undefined) {
		mounts.push({ kind: 'ro-bind', source: input.runtime.spareShell, target: SPARE_SHELL_PATH })
	}
	// After the tmpfs mounts, so a bind below /tmp or /run stays visible.
	for (const bind of input.readOnly) mounts.push({ kind: 'ro-bind', ...bind })
	mounts.push({ kind: 'bind', ...input.workspace })
	const exposed = exposedTargets(mounts).filter((target) => !target.startsWith(AGENT_RUNTIME_DIR))
	const masked: string[] = []
	const seen = new Set<string>()
	for (const mask of [...input.layout.etcSecrets, ...input.hidden]) {
		if (seen.has(mask.path) || !exposed.some((target) => isWithin(mask.path, target))) continue
		seen.add(mask.path)
		masked.push(mask.path)
		mounts.push(maskMount(mask, input.runtime.emptyFile))
	}
	// bwrap leaves its root tmpfs writable; nothing may be created beside the mounts above.
	mounts.push({ kind: 'remount-ro-root' })
	return { mounts, masked }
}

/** Whether a host path is visible at the same path inside (some same-path bind exposes it). */
export function visibleAtSamePath(path: string, plan: SandboxRootPlan): boolean {
	return plan.mounts.some(
		(mount) =>
			(mount.kind === 'ro-bind' || mount.kind === 'bind') &&
			mount.source === mount.target &&
			isWithin(path, mount.target),
	)
}

/** Whether a host path lies under the system binds every sandbox gets (`/usr`, `/etc`, …). */
export function underSystemBinds(path: string, layout: HostRootLayout): boolean {
	const roots = [
		'/usr',
		'/etc',
		...layout.systemEntries.filter((e) => e.kind === 'dir').map((e) => e.path),
	]
	return roots.some((root) => isWithin(path, root))
}

/** bwrap arguments for the mounts, in order. */
export function rootMountArgs(mounts: readonly RootMount[]): string[] {
	const args: string[] = []
	for (const mount of mounts) {
		switch (mount.kind) {
			case 'tmpfs-root':
				args.push('--tmpfs', '/')
				break
			case 'ro-bind':
				args.push('--ro-bind', mount.source, mount.target)
				break
			case 'bind':
				args.push('--bind', mount.source, mount.target)
				break
			case 'symlink':
				args.push('--symlink', mount.linkTarget, mount.path)
				break
			case 'dev':
				args.push('--dev', mount.path)
				break
			case 'proc':
				args.push('--proc', mount.path)
				break
			case 'tmpfs':
				// `--size` applies to the next tmpfs bwrap mounts.
				if (mount.sizeBytes !== undefined) args.push('--size', String(mount.sizeBytes))
				args.push('--tmpfs', mount.path)
				break
			case 'dir':
				args.push('--dir', mount.path)
				break
			case 'empty-dir':
				args.push('--tmpfs', mount.path, '--remount-ro', mount.path)
				break
			case 'empty-file':
				args.push('--ro-bind', mount.source, mount.path)
				break
			case 'remount-ro-root':
				args.push('--remount-ro', '/')
				break
		}
	}
	return args
}

/** One line per mount, for `doctor`. */
export function describeRootMount(mount: RootMount): string {
	switch (mount.kind) {
		case 'tmpfs-root':
			return '/ (empty tmpfs, read-only once set up)'
		case 'ro-bind':
			return mount.source === mount.target
				? `${mount.target} (read-only)`
				: `${mount.target} (read-only, from ${mount.source})`
		case 'bind':
			return mount.source === mount.target
				? `${mount.target} (read-write)`
				: `${mount.target} (read-write, from ${mount.source})`
		case 'symlink':
			return `${mount.path} -> ${mount.linkTarget}`
		case 'dev':
			return '/dev (minimal devices)'
		case 'proc':
			return "/proc (the sandbox's own pid namespace)"
		case 'tmpfs':
			return mount.sizeBytes === undefined
				? `${mount.path} (private tmpfs)`
				: `${mount.path} (private tmpfs, ${Math.round(mount.sizeBytes / MIB)} MiB)`
		case 'dir':
			return `${mount.path} (directory in the private tmpfs)`
		case 'empty-dir':
			return `${mount.path} (hidden: empty read-only tmpfs)`
		case 'empty-file':
			return `${mount.path} (hidden: empty read-only file)`
		case 'remount-ro-root':
			return '/ remounted read-only'
	}
}
