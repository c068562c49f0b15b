/**
 * The bubblewrap command line for one pod container, as a pure function so the flag set can be
 * pinned by tests. Unlike the local tier (which binds the host root read-only at `/`), the
 * container gets a fresh tmpfs root holding read-only binds of the host's system directories: a
 * container's volumes mount at arbitrary paths (`/workspace`, a block `devicePath`), and bwrap
 * cannot create a mount point inside a read-only bind. The root is remounted read-only last, so
 * only volumes and the private `/tmp` are writable. The network namespace is NOT unshared here:
 * the process is started inside the pod's namespace (`ip netns exec`), which it shares.
 */
import { dirname } from 'node:path'
import { type ContainerIdentity, identityBwrapArgs } from './security-context.js'

/** One entry of the host's `/`. */
export interface RootEntry {
	readonly name: string
	readonly kind: 'dir' | 'symlink' | 'other'
	/** Link target, for symlinks. */
	readonly target?: string
}

export interface ContainerMount {
	/** Host directory. */
	readonly source: string
	/** Absolute path inside the container. */
	readonly target: string
	readonly readOnly: boolean
}

/** A host device node (a block claim's loop device) bound into the container's `/dev`. */
export interface DeviceBind {
	/** Host device node, e.g. `/dev/loop3`. */
	readonly source: string
	/** Absolute path inside the container, e.g. `/dev/workspace`. */
	readonly target: string
}

export interface ContainerBwrapPlan {
	readonly rootEntries: readonly RootEntry[]
	/**
	 * Where the root entries live: absent, the host's own `/` (its system directories only); set,
	 * an image's root filesystem, every top-level entry of which is the container's.
	 */
	readonly imageRoot?: string
	/** Host files or directories the command needs (node, the agent bundle), bound read-only. */
	readonly readOnlyPaths: readonly string[]
	readonly mounts: readonly ContainerMount[]
	/** Device nodes bound into the sandbox's private `/dev`: only these, none of the host's others. */
	readonly devices?: readonly DeviceBind[]
	readonly identity: ContainerIdentity
	readonly hostname: string
	readonly workingDir: string
	/** Program first, absolute. */
	readonly command: readonly string[]
}

/** Host top-level directories a container sees (its "image"): system files only, never home dirs. */
export const IMAGE_ROOT_DIRS: readonly string[] = [
	'bin',
	'etc',
	'lib',
	'lib32',
	'lib64',
	'libx32',
	'opt',
	'sbin',
	'srv',
	'usr',
	'var',
]

/** An image's entries the runtime provides itself instead of the image's copies. */
const RUNTIME_DIRS: readonly string[] = ['dev', 'proc', 'sys', 'tmp']

export function buildContainerBwrapArgs(plan: ContainerBwrapPlan): string[] {
	const args = ['--tmpfs', '/']
	const source = plan.imageRoot?.replace(/\/+$/, '') ?? ''
	const wanted = (name: string): boolean =>
		plan.imageRoot === undefined ? IMAGE_ROOT_DIRS.includes(name) : !RUNTIME_DIRS.includes(name)
	for (const entry of [...plan.rootEntries].sort((a, b) => a.name.localeCompare(b.name))) {
		if (!wanted(entry.name)) continue
		if (entry.kind === 'symlink' && entry.target !== undefined) {
			args.push('--symlink', entry.target, `/${entry.name}`)
		} else if (entry.kind === 'dir') {
			args.push('--ro-bind', `${source}/${entry.name}`, `/${entry.name}`)
		}
	}
	args.push('--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp')
	for (const path of plan.readOnlyPaths) {
		const top = path.split('/')[1] ?? ''
		if (IMAGE_ROOT_DIRS.includes(top)) continue
		args.push('--ro-bind', path, path)
	}
	for (const mount of plan.mounts) {
		args.push(mount.readOnly ? '--ro-bind' : '--bind', mount.source, mount.target)
	}
	// `--bind` makes a mount nodev; a device node needs `--dev-bind` to be usable.
	for (const device of plan.devices ?? []) args.push('--dev-bind', device.source, device.target)
	args.push('--remount-ro', '/')
	// A privileged container is the kubelet's own root: no user namespace to map it into.
	if (plan.identity.privileged !== true) args.push('--unshare-user')
	args.push('--unshare-pid', '--unshare-ipc', '--unshare-uts')
	args.push('--unshare-cgroup-try')
	// The command is the container's pid 1, as under a real runtime: signals from the kubelet reach
	// it directly, and one it has no handler for (a shell's SIGTERM) is ignored, as in a container.
	args.push('--as-pid-1', '--die-with-parent', '--new-session')
	args.push(...identityBwrapArgs(plan.identity))
	args.push('--hostname', plan.hostname, '--chdir', plan.workingDir)
	args.push('--', ...plan.command)
	return args
}

/** The paths a container must see to run `node <bundle>`: the node binary and the bundle's dir. */
export function agentReadOnlyPaths(nodePath: string, agentBundlePath: string): string[] {
	return [nodePath, dirname(agentBundlePath)]
}
