/**
 * The bubblewrap command line for one sandbox, as a pure function of its plan so the flag set can
 * be pinned by tests. The root is the mount list of `sandbox-root.ts` (order matters there: the
 * private tmpfs mounts come before the binds below them, the masks after what they cover, and the
 * read-only remount of the root last). The agent's control socket is deliberately NOT mounted: the
 * agent inherits it as a descriptor.
 */
import type { MachineEgress } from '../machine/spec/machine-sandbox-spec.js'
import { type RootMount, rootMountArgs } from './sandbox-root.js'

export interface BwrapPlan {
	/** The sandbox's root, in mount order (`planSandboxRoot`). */
	readonly root: readonly RootMount[]
	/** Both kinds get their own network namespace; allow-all's plumbing comes in `networkArgs`. */
	readonly egress: MachineEgress
	/** bwrap arguments of the network plumbing (`bwrap-network.ts`), placed after the mounts. */
	readonly networkArgs?: readonly string[]
	/**
	 * Default true. False when per-command groups live in a cgroup v2 hierarchy: with `nsdelegate`
	 * the kernel refuses moves into groups outside the mover's cgroup namespace, whose root would be
	 * the agent's leaf.
	 */
	readonly unshareCgroupNamespace?: boolean
	readonly hostname: string
	/** bwrap's descriptor of the seccomp program (`machine/seccomp/`), applied before the command. */
	readonly seccompFd?: number
	/** Program and arguments run inside (absolute program path). */
	readonly command: readonly string[]
}

export function buildBwrapArgs(plan: BwrapPlan): string[] {
	const args = rootMountArgs(plan.root)
	// uid 0 inside, mapped to whatever uid bwrap runs as on the host (the sandbox uid on a root
	// host, the host user otherwise); every capability is dropped before the command runs.
	args.push('--unshare-user', '--uid', '0', '--gid', '0')
	args.push('--unshare-pid', '--unshare-ipc', '--unshare-uts')
	if (plan.unshareCgroupNamespace !== false) args.push('--unshare-cgroup-try')
	// Always a fresh network namespace (its own loopback): allow-all is slirp4netns attached to it.
	args.push('--unshare-net')
	args.push(...(plan.networkArgs ?? []))
	args.push('--die-with-parent', '--new-session', '--cap-drop', 'ALL')
	// Started at the root, not in the workspace: bwrap's own processes inside keep their working
	// directory for the sandbox's life, and one in the workspace would keep a filesystem a rollback
	// replaced (`image-swap.ts`) mounted until the end. The agent starts every command in it.
	args.push('--hostname', plan.hostname, '--chdir', '/')
	if (plan.seccompFd !== undefined) args.push('--seccomp', String(plan.seccompFd))
	args.push('--', ...plan.command)
	return args
}
