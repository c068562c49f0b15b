/**
 * The container's `securityContext` (over the pod's) reduced to what bubblewrap enforces: the uid
 * and gid inside the user namespace and the capability set. Pure.
 *
 * Honoured: `runAsUser`, `runAsGroup` (container over pod), `runAsNonRoot` (refused like a real
 * kubelet when the process would run as uid 0), `capabilities.drop`/`add` against the default set
 * a container runtime grants root. Always on whatever the spec says: no_new_privs (bubblewrap sets
 * it unconditionally, so `allowPrivilegeEscalation: true` is not granted), a read-only root
 * filesystem, and no capabilities at all for a non-root uid (a real runtime would leave them in
 * the bounding set only). `privileged` is decided by pod-runtime.ts (the guest image only).
 * Ignored: `supplementalGroups`, `fsGroup`, seccomp/SELinux/AppArmor profiles.
 */
import type { Container, Pod } from './kube-types.js'

/** The set containerd and CRI-O grant a container by default. */
export const DEFAULT_CAPABILITIES: readonly string[] = [
	'CAP_AUDIT_WRITE',
	'CAP_CHOWN',
	'CAP_DAC_OVERRIDE',
	'CAP_FOWNER',
	'CAP_FSETID',
	'CAP_KILL',
	'CAP_MKNOD',
	'CAP_NET_BIND_SERVICE',
	'CAP_NET_RAW',
	'CAP_SETFCAP',
	'CAP_SETGID',
	'CAP_SETPCAP',
	'CAP_SETUID',
	'CAP_SYS_CHROOT',
]

export interface ContainerIdentity {
	readonly uid: number
	readonly gid: number
	/** Capabilities the process keeps, `CAP_`-prefixed, sorted. */
	readonly capabilities: readonly string[]
	/**
	 * Real root with every capability and no user namespace: granted only to a root container of
	 * the guest image that asks for `privileged` (pod-runtime.ts decides), whose entrypoint formats
	 * and mounts its own block disk, as the shipped workspace template needs.
	 */
	readonly privileged?: boolean
}

export type SecurityResolution =
	| ({ readonly ok: true } & ContainerIdentity)
	| { readonly ok: false; readonly reason: 'CreateContainerConfigError'; readonly message: string }

/** `NET_ADMIN` / `cap_net_admin` / `CAP_NET_ADMIN` → `CAP_NET_ADMIN`. */
export function capabilityName(name: string): string {
	const upper = name.toUpperCase()
	return upper.startsWith('CAP_') ? upper : `CAP_${upper}`
}

export function resolveSecurity(pod: Pod, container: Container): SecurityResolution {
	const podContext = pod.spec.securityContext ?? {}
	const context = container.securityContext ?? {}
	// The "image" is the host's own filesystem with the agent as entrypoint: its user is root.
	const uid = context.runAsUser ?? podContext.runAsUser ?? 0
	const gid = context.runAsGroup ?? podContext.runAsGroup ?? 0
	const nonRoot = context.runAsNonRoot ?? podContext.runAsNonRoot ?? false
	if (nonRoot && uid === 0) {
		return {
			ok: false,
			reason: 'CreateContainerConfigError',
			message: 'container has runAsNonRoot and image will run as root',
		}
	}
	if (!Number.isSafeInteger(uid) || uid < 0 || !Number.isSafeInteger(gid) || gid < 0) {
		return {
			ok: false,
			reason: 'CreateContainerConfigError',
			message: `invalid runAsUser/runAsGroup ${uid}:${gid}`,
		}
	}
	const drop = (context.capabilities?.drop ?? []).map(capabilityName)
	const add = (context.capabilities?.add ?? []).map(capabilityName)
	const base = drop.includes('CAP_ALL') ? [] : DEFAULT_CAPABILITIES.filter((c) => !drop.includes(c))
	const granted = new Set(uid === 0 ? [...base, ...add.filter((c) => c !== 'CAP_ALL')] : [])
	return { ok: true, uid, gid, capabilities: [...granted].sort() }
}

/** The bubblewrap flags for an identity: always drop everything, then add back what is kept. */
export function identityBwrapArgs(identity: ContainerIdentity): string[] {
	// No user namespace, so no uid mapping: the kubelet's own root, every capability kept.
	if (identity.privileged === true) return ['--cap-add', 'ALL']
	const args = ['--uid', String(identity.uid), '--gid', String(identity.gid), '--cap-drop', 'ALL']
	for (const capability of identity.capabilities) args.push('--cap-add', capability)
	return args
}
