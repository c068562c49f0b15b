/**
 * What one sandbox on this machine is started with: the `create()` config layered over the
 * provider defaults, validated (the one resolver: the local tier's, which the container tier calls
 * before refusing what a container cannot do), plus the rule that decides whether a local
 * warm-pool member (started with the defaults) can serve a request.
 */
import { isAbsolute } from 'node:path'
import type { SandboxCheckpointKind } from '../../../contract/checkpoint.js'
import { SandboxConfigError } from '../../../contract/errors.js'
import type { SandboxCreateConfig } from '../../../contract/provider.js'
import {
	type EgressRule,
	hostPortRules,
	parseAllowedHosts,
} from '../../../host/egress/allowed-hosts.js'
import {
	type EgressCredential,
	parseEgressCredentials,
} from '../../../host/egress/egress-credentials.js'
import type { EgressDecision } from '../../../host/egress/egress-decision.js'
import {
	checkCreateConfig,
	checkFromCheckpoint,
	checkProviderDefaults,
	PORTABLE_CREATE_KEYS,
	type SandboxProviderDefaults,
	sandboxDefaultTimeoutMs,
	type UnlistedCreateKeys,
} from '../../../provider-defaults.js'
import { LocalEgressUnsupportedError } from '../machine-errors.js'
import { resolveKeepAliveMs } from './keep-alive-lifetime.js'
import { validatePathList } from './path-options.js'
import { parseCpuLimit, parseDiskLimitMb, refuseAboveHostMemory } from './sandbox-limits.js'

/**
 * How a sandbox's egress is enforced on this machine: loopback only (`deny-all`), slirp4netns
 * (`allow-all`), or the egress proxy (`proxied`: `static` and `resolver` policies).
 */
export type MachineEgress = 'deny-all' | 'allow-all' | 'proxied'

/** A `static` or `resolver` policy as the proxy enforces it, with the host-side options. */
export interface ProxiedEgress {
	readonly kind: 'static' | 'resolver'
	/** `static`: the parsed rules; `resolver`: asked when the sandbox starts. */
	readonly rules: readonly EgressRule[] | (() => Promise<readonly string[]>)
	readonly credentials: readonly EgressCredential[]
	/** `hostPorts`: the rules reaching those ports on the host's loopback (`hostPortRules`). */
	readonly hostPortRules: readonly EgressRule[]
	readonly onDecision?: (decision: EgressDecision) => void
}

/** The local tier's `create()` config: the portable one plus sandboxes that outlive their host. */
export interface LocalSandboxCreateConfig extends SandboxCreateConfig {
	/**
	 * Keep the sandbox running after this host process exits, so another process can reopen it by
	 * id (`openLocalSandbox`). Default false: the sandbox dies with its host, as before.
	 */
	readonly keepAlive?: boolean
	/**
	 * Lifetime of a kept-alive sandbox, default 1 hour (`DEFAULT_KEEP_ALIVE_MS`), at most 7 days.
	 * Enforced by a watchdog process even when no host is running.
	 */
	readonly keepAliveMs?: number
	/**
	 * Host paths bound read-only at the same path inside (e.g. a toolchain under `~/.nvm`), on top
	 * of `backend.readOnlyPaths`. Absolute, no `..`, must exist, never `/` or the state directory.
	 */
	readonly readOnlyPaths?: readonly string[]
	/** Paths masked inside even though a bind would expose them, on top of `backend.hiddenPaths`. */
	readonly hiddenPaths?: readonly string[]
	/** CPU cores (fractional allowed), enforced as a CFS quota. Default: only a fair share. */
	readonly cpuLimit?: number
	/**
	 * Size of the workspace in MiB, enforced as a loop-mounted filesystem of that size. Only for an
	 * ephemeral workspace on a root host; refused by name anywhere else (`DiskLimitUnavailableError`).
	 */
	readonly diskLimitMb?: number
	/**
	 * Headers the egress proxy adds to requests for one host, outside the sandbox (`static` and
	 * `resolver` egress only): plain HTTP is rewritten, HTTPS terminated with a per-sandbox CA whose
	 * certificate alone the sandbox trusts. The sandbox never sees the values.
	 */
	readonly egressCredentials?: readonly EgressCredential[]
	/** Told each verdict of the egress proxy (`static` and `resolver` egress only). Must not throw. */
	readonly onEgressDecision?: (decision: EgressDecision) => void
	/**
	 * Let the workload create namespaces (`unshare -Ur`, rootless builders), `clone3` and mount
	 * inside them. Default false: the seccomp filter refuses them with EPERM, because a user
	 * namespace hands the workload every capability over namespaces of its own — kernel surface
	 * (nf_tables and the like) that is otherwise out of its reach. See docs/guides/seccomp.md.
	 */
	readonly allowUserNamespaces?: boolean
}

export interface MachineSandboxSpec {
	/** Caller-owned workspace (never removed); absent ⇒ an ephemeral one. */
	readonly workingDirectory?: string
	/** A fork: the id of the checkpoint whose content the ephemeral workspace starts with. */
	readonly from?: string
	readonly env: Readonly<Record<string, string>>
	readonly timeoutMs?: number
	readonly memoryLimitMb?: number
	readonly maxProcesses?: number
	readonly egress: MachineEgress
	/** Set when `egress` is `proxied`. */
	readonly proxiedEgress?: ProxiedEgress
	/** Present ⇒ the sandbox outlives its host for this many milliseconds. */
	readonly keepAliveMs?: number
	/** Normalized, lexically valid; checked against the host when the sandbox starts. Absent ⇒ none. */
	readonly readOnlyPaths?: readonly string[]
	readonly hiddenPaths?: readonly string[]
	readonly cpuLimit?: number
	readonly diskLimitMb?: number
	/** The seccomp filter lets the workload create namespaces (`allowUserNamespaces`). */
	readonly allowUserNamespaces?: true
}

/** The local tier's `create()` keys: the portable ones and `LocalSandboxCreateConfig`'s own. */
export const LOCAL_CREATE_KEYS = [
	...PORTABLE_CREATE_KEYS,
	'keepAlive',
	'keepAliveMs',
	'readOnlyPaths',
	'hiddenPaths',
	'cpuLimit',
	'diskLimitMb',
	'egressCredentials',
	'onEgressDecision',
	'allowUserNamespaces',
] as const satisfies readonly (keyof LocalSandboxCreateConfig)[]
// A new option of the type fails the build until the table lists it.
const localKeysListed: Record<
	UnlistedCreateKeys<LocalSandboxCreateConfig, typeof LOCAL_CREATE_KEYS>,
	never
> = {}
void localKeysListed

/** Keys the agent reads for itself; the agent scrubs them from children, so they could never apply. */
const RESERVED_ENV_PREFIXES = ['NAMZU_AGENT_', 'NAMZU_SANDBOX_']

function environment(value: unknown): Record<string, string> {
	if (value === undefined) return {}
	if (typeof value !== 'object' || value === null || Array.isArray(value)) {
		throw new SandboxConfigError('env', 'must be an object of string values')
	}
	const env: Record<string, string> = {}
	for (const [key, entry] of Object.entries(value)) {
		if (typeof entry !== 'string') {
			throw new SandboxConfigError('env', `value of ${key} must be a string`)
		}
		if (key === '' || key.includes('=') || key.includes('\0') || entry.includes('\0')) {
			throw new SandboxConfigError('env', `invalid variable ${JSON.stringify(key)}`)
		}
		if (RESERVED_ENV_PREFIXES.some((prefix) => key.startsWith(prefix))) {
			throw new SandboxConfigError('env', `${key} is reserved for the sandbox agent`)
		}
		env[key] = entry
	}
	return env
}

/**
 * The one resolution of a `create()` config's egress on this host (every tier here): the kind, and
 * for `static` / `resolver` the policy the proxy enforces with its credentials and decisions.
 */
export function resolveMachineEgress(
	config: Pick<LocalSandboxCreateConfig, 'egress' | 'egressCredentials' | 'onEgressDecision'>,
	defaults: SandboxProviderDefaults,
	keptAlive: boolean,
): Pick<MachineSandboxSpec, 'egress' | 'proxiedEgress'> {
	const policy = config.egress ?? defaults.defaultEgress ?? { kind: 'deny-all' }
	const field = config.egress === undefined ? 'defaultEgress' : 'egress'
	const kind: unknown = policy.kind
	const proxied = kind === 'static' || kind === 'resolver'
	if (!proxied && (config.egressCredentials !== undefined || config.onEgressDecision)) {
		throw new SandboxConfigError(
			config.egressCredentials === undefined ? 'onEgressDecision' : 'egressCredentials',
			`needs a 'static' or 'resolver' egress policy (this one is ${JSON.stringify(kind)})`,
		)
	}
	if (kind === 'deny-all' || kind === 'allow-all') return { egress: kind }
	if (!proxied)
		throw new SandboxConfigError('egress', `unknown egress kind ${JSON.stringify(kind)}`)
	// The proxy lives in this host process: a sandbox outliving it would be left with no network.
	if (keptAlive) throw new LocalEgressUnsupportedError(kind, 'a kept-alive sandbox')
	let rules: ProxiedEgress['rules']
	if (policy.kind === 'static')
		rules = parseAllowedHosts(policy.allowedHosts, `${field}.allowedHosts`)
	else if (policy.kind === 'resolver' && typeof policy.resolve === 'function') {
		rules = policy.resolve
	} else throw new SandboxConfigError(`${field}.resolve`, 'must be a function')
	const onDecision: unknown = config.onEgressDecision
	if (onDecision !== undefined && typeof onDecision !== 'function') {
		throw new SandboxConfigError('onEgressDecision', 'must be a function')
	}
	return {
		egress: 'proxied',
		proxiedEgress: {
			kind,
			rules,
			credentials: parseEgressCredentials(config.egressCredentials),
			hostPortRules: hostPortRules(policy.hostPorts, `${field}.hostPorts`),
			...(config.onEgressDecision ? { onDecision: config.onEgressDecision } : {}),
		},
	}
}

/**
 * The spec a `create()` config asks for, over the provider defaults; the portable fields are
 * checked first (provider-defaults.ts), so an explicit `null` never falls through to a default.
 */
export function resolveMachineSandboxSpec(
	config: LocalSandboxCreateConfig,
	defaults: SandboxProviderDefaults,
	known: readonly string[] = LOCAL_CREATE_KEYS,
	checkpointKinds: readonly SandboxCheckpointKind[] = [],
): MachineSandboxSpec {
	checkCreateConfig(config, known, checkpointKinds)
	const from = checkFromCheckpoint(config.from, checkpointKinds)
	checkProviderDefaults(defaults)
	const workingDirectory: unknown = config.workingDirectory
	if (
		workingDirectory !== undefined &&
		(typeof workingDirectory !== 'string' || !isAbsolute(workingDirectory))
	) {
		throw new SandboxConfigError(
			'workingDirectory',
			`must be an absolute host path, got ${JSON.stringify(workingDirectory)}`,
		)
	}
	if (from !== undefined && workingDirectory !== undefined) {
		throw new SandboxConfigError('from', 'a fork gets a fresh workspace: not with workingDirectory')
	}
	const timeoutMs = sandboxDefaultTimeoutMs(config, defaults)
	const memoryLimitMb = config.memoryLimitMb ?? defaults.defaultMemoryLimitMb
	refuseAboveHostMemory(memoryLimitMb, config.memoryLimitMb === undefined)
	const maxProcesses = config.maxProcesses ?? defaults.defaultMaxProcesses
	const keepAliveMs = resolveKeepAliveMs(config.keepAlive, config.keepAliveMs)
	const readOnlyPaths = validatePathList('readOnlyPaths', config.readOnlyPaths)
	const hiddenPaths = validatePathList('hiddenPaths', config.hiddenPaths)
	const cpuLimit = parseCpuLimit(config.cpuLimit)
	const diskLimitMb = parseDiskLimitMb(config.diskLimitMb)
	const allowUserNamespaces: unknown = config.allowUserNamespaces
	if (allowUserNamespaces !== undefined && typeof allowUserNamespaces !== 'boolean') {
		throw new SandboxConfigError('allowUserNamespaces', 'must be a boolean')
	}
	return {
		...(workingDirectory === undefined ? {} : { workingDirectory }),
		...(from === undefined ? {} : { from }),
		env: environment(config.env),
		...(timeoutMs === undefined ? {} : { timeoutMs }),
		...(memoryLimitMb === undefined ? {} : { memoryLimitMb }),
		...(maxProcesses === undefined ? {} : { maxProcesses }),
		...resolveMachineEgress(config, defaults, keepAliveMs !== undefined),
		...(keepAliveMs === undefined ? {} : { keepAliveMs }),
		...(readOnlyPaths.length === 0 ? {} : { readOnlyPaths }),
		...(hiddenPaths.length === 0 ? {} : { hiddenPaths }),
		...(cpuLimit === undefined ? {} : { cpuLimit }),
		...(diskLimitMb === undefined ? {} : { diskLimitMb }),
		...(allowUserNamespaces === true ? { allowUserNamespaces: true } : {}),
	}
}

function samePaths(a: readonly string[] = [], b: readonly string[] = []): boolean {
	return a.length === b.length && a.every((path, index) => path === b[index])
}

/**
 * Whether a sandbox started for `pooled` can serve `requested`. `timeoutMs` is ignored: it only
 * shapes the host-side Sandbox object, which is built at hand-out time.
 */
export function canServeFromPool(
	pooled: MachineSandboxSpec,
	requested: MachineSandboxSpec,
): boolean {
	return (
		requested.from === undefined &&
		requested.keepAliveMs === undefined &&
		pooled.keepAliveMs === undefined &&
		requested.workingDirectory === undefined &&
		pooled.workingDirectory === undefined &&
		Object.keys(requested.env).length === 0 &&
		Object.keys(pooled.env).length === 0 &&
		requested.memoryLimitMb === pooled.memoryLimitMb &&
		requested.maxProcesses === pooled.maxProcesses &&
		requested.egress === pooled.egress &&
		// A proxied sandbox's proxy (its rules, credentials, decision log) is its creator's own.
		requested.egress !== 'proxied' &&
		samePaths(requested.readOnlyPaths, pooled.readOnlyPaths) &&
		samePaths(requested.hiddenPaths, pooled.hiddenPaths) &&
		requested.cpuLimit === pooled.cpuLimit &&
		requested.diskLimitMb === pooled.diskLimitMb &&
		requested.allowUserNamespaces === pooled.allowUserNamespaces
	)
}
