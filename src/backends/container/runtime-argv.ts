/**
 * The command lines of each OCI runtime this tier drives, as pure functions. Every container has
 * its own runtime state directory (`--root`) inside the sandbox's state root, so nothing of a
 * container survives its state root: a reaper that removes the root removes the runtime's record.
 *
 * - runc: as is.
 * - crun 1.8.1 refuses hybrid cgroup hosts; it works when run in a private mount namespace
 *   without the unified (v2) mount, so every crun command goes through `unshare -m` and a shell
 *   that unmounts it first (a missing v2 mount is not an error). It manages no cgroups.
 * - runsc (gVisor): its own kernel, so a unix socket the agent binds inside reaches the host only
 *   with `--host-uds=create`; `--platform` is `ptrace` or `systrap` (KVM is not usable here).
 */

/** The OCI runtimes this tier drives. */
export type ContainerRuntime = 'runc' | 'crun' | 'runsc'

export const CONTAINER_RUNTIMES: readonly ContainerRuntime[] = ['runc', 'crun', 'runsc']

export const DEFAULT_RUNTIME_PATHS: Readonly<Record<ContainerRuntime, string>> = {
	runc: '/usr/sbin/runc',
	crun: '/usr/bin/crun',
	runsc: '/usr/bin/runsc',
}

/** The Debian package that ships each runtime. */
export const RUNTIME_PACKAGES: Readonly<Record<ContainerRuntime, string>> = {
	runc: 'runc',
	crun: 'crun',
	runsc: 'runsc',
}

/** gVisor's platform: how its kernel intercepts the workload's system calls. */
export type RunscPlatform = 'ptrace' | 'systrap'

export interface RuntimeInvocation {
	readonly runtime: ContainerRuntime
	readonly path: string
	/** `--root`: this container's runtime state. */
	readonly stateDir: string
	readonly runscPlatform?: RunscPlatform
	/** util-linux `unshare` and a POSIX shell, for crun. */
	readonly unsharePath?: string
	readonly shellPath?: string
}

export const DEFAULT_UNSHARE_PATH = '/usr/bin/unshare'
export const DEFAULT_SHELL_PATH = '/bin/sh'
const CRUN_WRAPPER = 'umount /sys/fs/cgroup/unified 2>/dev/null; exec "$@"'

function globalFlags(invocation: RuntimeInvocation): string[] {
	const flags = ['--root', invocation.stateDir]
	// crun would put its groups at the top of every hierarchy, outside the sandbox's limits; with
	// no cgroup manager the container stays in the groups crun was started in: the sandbox's.
	if (invocation.runtime === 'crun') flags.push('--cgroup-manager=disabled')
	if (invocation.runtime === 'runsc') {
		// Without --oci-seccomp gVisor ignores the config's linux.seccomp.
		flags.push(
			'--host-uds=create',
			'--oci-seccomp',
			`--platform=${invocation.runscPlatform ?? 'ptrace'}`,
		)
		// Loopback only; the sandbox's host cgroups (which the runtime is started in) bound it.
		flags.push('--network=none', '--ignore-cgroups')
	}
	return flags
}

function command(invocation: RuntimeInvocation, args: readonly string[]): string[] {
	const runtimeArgv = [invocation.path, ...globalFlags(invocation), ...args]
	if (invocation.runtime !== 'crun') return runtimeArgv
	return [
		invocation.unsharePath ?? DEFAULT_UNSHARE_PATH,
		'-m',
		'--propagation',
		'private',
		invocation.shellPath ?? DEFAULT_SHELL_PATH,
		'-c',
		CRUN_WRAPPER,
		'sh',
		...runtimeArgv,
	]
}

export interface CreateArgs {
	readonly containerId: string
	readonly bundle: string
	readonly pidFile: string
	/** Descriptors from 3 on that the container's first process inherits. */
	readonly preserveFds: number
}

export function createArgv(invocation: RuntimeInvocation, args: CreateArgs): string[] {
	return command(invocation, [
		'create',
		'--bundle',
		args.bundle,
		'--pid-file',
		args.pidFile,
		...(args.preserveFds > 0 ? ['--preserve-fds', String(args.preserveFds)] : []),
		args.containerId,
	])
}

export function startArgv(invocation: RuntimeInvocation, containerId: string): string[] {
	return command(invocation, ['start', containerId])
}

export function deleteArgv(invocation: RuntimeInvocation, containerId: string): string[] {
	return command(invocation, ['delete', '--force', containerId])
}

/** `run` of a bundle to completion (the benchmark's baseline and the runtime probe). */
export function runArgv(
	invocation: RuntimeInvocation,
	containerId: string,
	bundle: string,
): string[] {
	return command(invocation, ['run', '--bundle', bundle, containerId])
}

/**
 * gVisor's `checkpoint`: the sandbox's whole state into `imagePath`, after which the container has
 * stopped (`--leave-running` restores a new one under the command itself, outside the sandbox's
 * cgroups, so it is not used: the host restores the sandbox itself).
 */
export function checkpointArgv(
	invocation: RuntimeInvocation,
	containerId: string,
	imagePath: string,
): string[] {
	return command(invocation, ['checkpoint', '--image-path', imagePath, containerId])
}

export interface RestoreArgs {
	readonly containerId: string
	readonly bundle: string
	readonly imagePath: string
	readonly pidFile: string
}

/** gVisor's `restore` of an image into a new running container (create and start in one). */
export function restoreArgv(invocation: RuntimeInvocation, args: RestoreArgs): string[] {
	return command(invocation, [
		'restore',
		'--detach',
		'--bundle',
		args.bundle,
		'--image-path',
		args.imagePath,
		'--pid-file',
		args.pidFile,
		args.containerId,
	])
}

/**
 * A signal to the container's first process. No `--pid`: a container restored under another id
 * than the one its image was taken under keeps the old id on its processes, and gVisor refuses a
 * `--pid` there, while the container's own init is still reached.
 */
export function signalArgv(
	invocation: RuntimeInvocation,
	containerId: string,
	signal: string,
): string[] {
	return command(invocation, ['kill', containerId, signal])
}
