/**
 * The bubblewrap command line for one sandbox, as a pure function of its layout so the flag set can
 * be pinned by tests. Mount order matters: `--tmpfs /tmp` hides the host's /tmp, so every bind that
 * must stay visible (workspace, anything the agent runs from under /tmp) comes after it. The agent's
 * control socket is deliberately NOT mounted: the agent inherits it as a descriptor.
 */
import type { LocalEgress } from './local-sandbox-spec.js'
import { sizedTmpfsArgs, type TmpfsSizes } from './sandbox-limits.js'

export interface BwrapPlan {
	/** Workspace, bound read-write at the same absolute path inside. */
	readonly workspace: string
	/** Writable home created inside the private /tmp (never under the workspace). */
	readonly homeDir: string
	/** Host paths the command needs that the fresh /tmp would hide, bound read-only. */
	readonly readOnlyBinds: readonly string[]
	/** Both kinds get their own network namespace; allow-all's plumbing comes in `networkArgs`. */
	readonly egress: LocalEgress
	/** Sizes of the sandbox's tmpfs mounts (unsized when absent). */
	readonly tmpfsSizes?: TmpfsSizes
	/** bwrap arguments of the network plumbing (`local-network.ts`), placed after the mounts. */
	readonly networkArgs?: readonly string[]
	/**
	 * Default true. False when per-command groups live in a cgroup v2 hierarchy: with `nsdelegate`
	 * the kernel refuses moves into groups outside the mover's cgroup namespace, whose root would be
	 * the agent's leaf.
	 */
	readonly unshareCgroupNamespace?: boolean
	readonly hostname: string
	/** Program and arguments run inside (absolute program path). */
	readonly command: readonly string[]
}

/** Mount points bwrap replaces with fresh instances; host paths below them need re-binding. */
const REPLACED_MOUNTS = ['/tmp', '/run', '/dev', '/proc'] as const

/** Whether `path` lies under a mount the sandbox replaces, so it must be bound explicitly. */
export function hiddenInsideSandbox(path: string): boolean {
	return REPLACED_MOUNTS.some((mount) => path === mount || path.startsWith(`${mount}/`))
}

export function buildBwrapArgs(plan: BwrapPlan): string[] {
	const sizes = plan.tmpfsSizes
	const tmpfs = (mount: '/tmp' | '/run' | '/dev/shm') =>
		sizes ? sizedTmpfsArgs(mount, sizes) : ['--tmpfs', mount]
	const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', ...tmpfs('/tmp')]
	// bwrap's /dev/shm is a directory of its (unsized) /dev tmpfs: give it a sized mount of its own.
	if (sizes) args.push(...tmpfs('/dev/shm'))
	// A read-only bind does not stop connect() on a unix socket, and /run is where the host's
	// daemons (docker, dbus, systemd) keep theirs: the sandbox gets an empty /run instead.
	args.push(...tmpfs('/run'))
	for (const path of plan.readOnlyBinds) args.push('--ro-bind', path, path)
	args.push('--bind', plan.workspace, plan.workspace)
	args.push('--dir', plan.homeDir)
	args.push('--unshare-user', '--unshare-pid', '--unshare-ipc', '--unshare-uts')
	if (plan.unshareCgroupNamespace !== false) args.push('--unshare-cgroup-try')
	// Always a fresh network namespace (its own loopback): allow-all is slirp4netns attached to it.
	args.push('--unshare-net')
	args.push(...(plan.networkArgs ?? []))
	args.push('--die-with-parent', '--new-session', '--cap-drop', 'ALL')
	args.push('--hostname', plan.hostname, '--chdir', plan.workspace)
	args.push('--', ...plan.command)
	return args
}

/**
 * `/bin/sh` script that writes its own pid into every cgroup `procs` file given before `--`, then
 * execs the rest. Joining before bwrap starts means every process bwrap forks is born inside the
 * limits; writing bwrap's pid from the host after spawn would race its first fork.
 */
export const CGROUP_JOIN_SCRIPT =
	'while [ "$1" != "--" ]; do echo $$ > "$1" || { echo "namzu: cannot join cgroup $1" >&2; exit 125; }; shift; done; shift; exec "$@"'

/** argv (program first) that joins `procsFiles` and then runs `command`. */
export function withCgroupJoin(
	procsFiles: readonly string[],
	command: readonly string[],
): string[] {
	if (procsFiles.length === 0) return [...command]
	return ['/bin/sh', '-c', CGROUP_JOIN_SCRIPT, 'namzu-cgroup-join', ...procsFiles, '--', ...command]
}
