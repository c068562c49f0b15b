/**
 * A `create()` config of the container tier, checked before anything is started. The portable
 * fields, the environment, the egress kinds and their credentials go through the machine layer's
 * one resolver (the same checks); what a container cannot do is refused by name: a host working
 * directory (the workspace is the container's own), kept-alive sandboxes, extra read-only or hidden
 * host paths, and — on gVisor — every egress kind but `deny-all`.
 */
import type { SandboxCheckpointKind } from '../../contract/checkpoint.js'
import { SandboxConfigError } from '../../contract/errors.js'
import type { SandboxCreateConfig } from '../../contract/provider.js'
import {
	PORTABLE_CREATE_KEYS,
	type SandboxProviderDefaults,
	type UnlistedCreateKeys,
} from '../../provider-defaults.js'
import {
	type LocalSandboxCreateConfig,
	type MachineEgress,
	type ProxiedEgress,
	resolveMachineSandboxSpec,
} from '../machine/spec/machine-sandbox-spec.js'
import { ContainerEgressUnsupportedError } from './container-errors.js'
import type { ContainerRuntime } from './runtime-argv.js'

export interface ContainerSandboxCreateConfig
	extends SandboxCreateConfig,
		Pick<
			LocalSandboxCreateConfig,
			'egressCredentials' | 'onEgressDecision' | 'allowUserNamespaces'
		> {
	/** Cores, enforced as a CFS quota. */
	readonly cpuLimit?: number
	/** A workspace of this many MiB (a loop-mounted filesystem); writes past it fail with ENOSPC. */
	readonly diskLimitMb?: number
}

export interface ContainerSandboxSpec {
	/** A fork: the checkpoint whose content the workspace starts with. */
	readonly from?: string
	readonly env: Readonly<Record<string, string>>
	readonly timeoutMs?: number
	readonly memoryLimitMb?: number
	readonly maxProcesses?: number
	readonly cpuLimit?: number
	readonly diskLimitMb?: number
	readonly egress: MachineEgress
	/** Set when `egress` is `proxied` (`static` / `resolver`). */
	readonly proxiedEgress?: ProxiedEgress
	/** The seccomp filter lets the workload create namespaces. */
	readonly allowUserNamespaces?: true
}

/**
 * gVisor runs its own network stack (`--network=none`: loopback inside the sentry): the host can
 * neither set the capture route in it nor attach slirp4netns to it, so only `deny-all` holds there.
 */
export const RUNSC_EGRESS_REASON =
	"gVisor's network stack is its own (the sandbox runs with --network=none): the host cannot route its connects into the egress proxy or attach user-mode networking to it"

const REFUSED_KEYS: Readonly<Record<string, string>> = {
	workingDirectory:
		"the container tier serves the 'ephemeral' workspace mode only; host directories come in through the provider's layout",
	keepAlive: 'kept-alive sandboxes are a local-tier feature',
	keepAliveMs: 'kept-alive sandboxes are a local-tier feature',
	readOnlyPaths: "host paths come in through the provider's layout",
	hiddenPaths:
		'the container sees only its image and its layout; there is nothing of the host to hide',
}

/** The container tier's `create()` keys: the portable ones (less a host working directory) and its own. */
export const CONTAINER_CREATE_KEYS = [
	...PORTABLE_CREATE_KEYS.filter((key) => key !== 'workingDirectory'),
	'cpuLimit',
	'diskLimitMb',
	'egressCredentials',
	'onEgressDecision',
	'allowUserNamespaces',
] as const satisfies readonly (keyof ContainerSandboxCreateConfig)[]
// A new option of the type fails the build until the table lists it (or REFUSED_KEYS names it).
const containerKeysListed: Record<
	Exclude<
		UnlistedCreateKeys<ContainerSandboxCreateConfig, typeof CONTAINER_CREATE_KEYS>,
		'workingDirectory'
	>,
	never
> = {}
void containerKeysListed

export function resolveContainerSandboxSpec(
	config: ContainerSandboxCreateConfig,
	defaults: SandboxProviderDefaults,
	runtime: ContainerRuntime = 'runc',
	checkpointKinds: readonly SandboxCheckpointKind[] = [],
): ContainerSandboxSpec {
	// What a container cannot do is named as such before any key is called unknown.
	for (const [key, why] of Object.entries(REFUSED_KEYS)) {
		if (config !== null && typeof config === 'object' && Reflect.get(config, key) !== undefined)
			throw new SandboxConfigError(key, `not supported: ${why}`)
	}
	const local = resolveMachineSandboxSpec(config, defaults, CONTAINER_CREATE_KEYS, checkpointKinds)
	if (local.egress !== 'deny-all' && runtime === 'runsc') {
		// 'proxied' is the local tier's name for static and resolver: name the caller's own kind.
		throw new ContainerEgressUnsupportedError(
			local.proxiedEgress?.kind ?? local.egress,
			runtime,
			RUNSC_EGRESS_REASON,
		)
	}
	return {
		...(local.from === undefined ? {} : { from: local.from }),
		env: local.env,
		...(local.timeoutMs === undefined ? {} : { timeoutMs: local.timeoutMs }),
		...(local.memoryLimitMb === undefined ? {} : { memoryLimitMb: local.memoryLimitMb }),
		...(local.maxProcesses === undefined ? {} : { maxProcesses: local.maxProcesses }),
		...(local.cpuLimit === undefined ? {} : { cpuLimit: local.cpuLimit }),
		...(local.diskLimitMb === undefined ? {} : { diskLimitMb: local.diskLimitMb }),
		egress: local.egress,
		...(local.proxiedEgress === undefined ? {} : { proxiedEgress: local.proxiedEgress }),
		...(local.allowUserNamespaces === true ? { allowUserNamespaces: true } : {}),
	}
}

/** Whether a pooled container (started with `pooled`) can serve a create asking for `requested`. */
export function canServeFromContainerPool(
	pooled: ContainerSandboxSpec,
	requested: ContainerSandboxSpec,
): boolean {
	return (
		requested.from === undefined &&
		Object.keys(requested.env).length === 0 &&
		Object.keys(pooled.env).length === 0 &&
		requested.memoryLimitMb === pooled.memoryLimitMb &&
		requested.maxProcesses === pooled.maxProcesses &&
		requested.cpuLimit === pooled.cpuLimit &&
		requested.diskLimitMb === pooled.diskLimitMb &&
		requested.egress === pooled.egress &&
		requested.allowUserNamespaces === pooled.allowUserNamespaces &&
		// A proxied sandbox's proxy (its rules, credentials, decision log) is its creator's own.
		requested.egress !== 'proxied'
	)
}
