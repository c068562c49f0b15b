/**
 * `ContainerBackendConfig` (`tier: 'container'`) and `ACIStandbyPoolBackendConfig` (the same tier,
 * `runtime: 'aci-standby-pool'`, checked by `aci/aci-config.ts`), validated once at provider
 * construction with every default resolved.
 *
 * `runtime` takes the OCI runtimes this tier drives directly: `'runc'` (the default), `'crun'`,
 * `'runsc'`; `'docker'` is a Docker engine driven through its API (`docker/`), resolved there.
 */

import { homedir, tmpdir } from 'node:os'
import { isAbsolute, join } from 'node:path'
import { isRecord } from '../../common/is-record.js'
import {
	CONFIG_SITE,
	describeReceived,
	optionalDurationMs,
	optionalInteger,
	refuseUnknownKeys,
	requireObject,
	requireOneOf,
	requireString,
} from '../../contract/argument-validators.js'
import { SandboxConfigError } from '../../contract/errors.js'
import type { DefaultLimitsMode } from '../machine/cgroups/cgroup-limits.js'
import { resolveSandboxUidRange, type SandboxUidRange } from '../machine/claims/sandbox-identity.js'
import { DEFAULT_NETWORK_TOOLS, type NetworkToolPaths } from '../machine/network/egress-network.js'
import { resolveMaxCheckpoints } from '../machine/snapshots/checkpoint-verbs.js'
import { DEFAULT_MKFS_EXT4_PATH } from '../machine/workspace/workspace-disk.js'
import { DEFAULT_UMOCI_PATH } from './container-image.js'
import {
	CONTAINER_RUNTIMES,
	type ContainerRuntime,
	DEFAULT_RUNTIME_PATHS,
	type RunscPlatform,
} from './runtime-argv.js'

/** The container tier: the same agent in an OCI container run by `runc`, `crun` or gVisor's `runsc`. */
export interface ContainerBackendConfig {
	readonly tier: 'container'
	/** Default `'runc'`; `'docker'` makes the containers through a Docker engine's API. */
	readonly runtime?: ContainerRuntime | 'docker'
	/**
	 * A root filesystem directory, or an OCI image layout (`<dir>` or `<dir>:<tag>`); on
	 * `'docker'`, an image reference the engine has (`localhost/namzu-sandbox-guest:latest`).
	 */
	readonly image: string
	/**
	 * `'docker'` only: the engine, `unix:///path/to/socket` (default `DOCKER_HOST`, else
	 * `unix:///var/run/docker.sock`); a `tcp://` engine is refused.
	 */
	readonly dockerHost?: string
	/** The runtime's binary (default `/usr/sbin/runc`, `/usr/bin/crun`, `/usr/bin/runsc`). */
	readonly runtimePath?: string
	/** gVisor's platform (default `'ptrace'`; KVM is not offered). */
	readonly runscPlatform?: RunscPlatform
	/** Default the OS temporary directory: the same state directory the local tier uses. */
	readonly stateDir?: string
	/** Where OCI layouts are unpacked (default `~/.cache/namzu-sandbox/container-images`). */
	readonly imageCacheDir?: string
	/** Default 30 000. */
	readonly readyTimeoutMs?: number
	/** Pause between dials while the agent starts (default 20). */
	readonly readyPollIntervalMs?: number
	/** Containers started and probed ahead of `create()` (default 0). */
	readonly warmPoolSize?: number
	/** The checkpoints the provider keeps at most (default 256); past it `CheckpointLimitError`. */
	readonly maxCheckpoints?: number
	/** Host uids handed out one per sandbox (the machine layer's range and locks). */
	readonly sandboxUidRange?: SandboxUidRange
	readonly defaultLimits?: DefaultLimitsMode
	/** Recorded as OCI annotations on every container. */
	readonly labels?: Readonly<Record<string, string>>
	/** Only `'none'` (own network namespace): the host reaches the agent over a unix socket. */
	readonly network?: 'none'
	/** Paths of host programs the tier runs. */
	readonly tools?: ContainerToolPaths
}

/** Host programs the container tier runs besides the runtime (absolute paths). */
export interface ContainerToolPaths {
	readonly umoci?: string
	readonly mkfsExt4?: string
	/** Default `/usr/bin/slirp4netns`: `allow-all` egress. */
	readonly slirp4netns?: string
	/** Default `/usr/sbin/nft`: `allow-all`'s host-address guard. */
	readonly nft?: string
	/** Default `/usr/bin/nsenter`: entering the container's network namespace from the host. */
	readonly nsenter?: string
	/** Default `/usr/sbin/ip` (iproute2): the capture route of `static` / `resolver` egress. */
	readonly ip?: string
}

/** The Azure Container Instances standby pool (`aci/`; not run against Azure here). */
export interface ACIStandbyPoolBackendConfig {
	readonly tier: 'container'
	readonly runtime: 'aci-standby-pool'
	readonly subscriptionId: string
	readonly resourceGroup: string
	readonly location: string
	readonly standbyPoolResourceId: string
	readonly containerGroupProfileResourceId: string
	readonly containerGroupProfileRevision?: number
	/** An Azure Resource Manager bearer token, asked for on every call. */
	readonly getArmToken: () => Promise<string>
	readonly subnetId?: string
	readonly readyPollIntervalMs?: number
	readonly readyTimeoutMs?: number
	readonly workerPort?: number
	readonly armApiVersion?: string
	readonly containerNamePrefix?: string
}

export interface ResolvedContainerBackendConfig {
	readonly runtime: ContainerRuntime
	readonly runtimePath: string
	readonly runscPlatform: RunscPlatform
	readonly image: string
	readonly stateDir: string
	readonly imageCacheDir: string
	readonly readyTimeoutMs: number
	readonly readyPollIntervalMs: number
	readonly warmPoolSize: number
	readonly maxCheckpoints: number
	readonly sandboxUidRange: SandboxUidRange
	readonly defaultLimits: DefaultLimitsMode
	readonly labels: Readonly<Record<string, string>>
	readonly tools: NetworkToolPaths & { readonly umoci: string; readonly mkfsExt4: string }
}

/** How long `create()` waits for a container's agent to answer, unless `readyTimeoutMs` is set. */
export const DEFAULT_CONTAINER_READY_TIMEOUT_MS = 30_000
export const DEFAULT_CONTAINER_READY_POLL_INTERVAL_MS = 20
/** The largest `warmPoolSize` accepted (each member is a live container). */
export const MAX_CONTAINER_WARM_POOL_SIZE = 64

const BACKEND_KEYS = Object.keys({
	tier: true,
	runtime: true,
	image: true,
	dockerHost: true,
	runtimePath: true,
	runscPlatform: true,
	stateDir: true,
	imageCacheDir: true,
	readyTimeoutMs: true,
	readyPollIntervalMs: true,
	warmPoolSize: true,
	maxCheckpoints: true,
	sandboxUidRange: true,
	defaultLimits: true,
	labels: true,
	network: true,
	tools: true,
} satisfies Record<keyof ContainerBackendConfig, true>)
const TOOL_KEYS = Object.keys({
	umoci: true,
	mkfsExt4: true,
	slirp4netns: true,
	nft: true,
	nsenter: true,
	ip: true,
} satisfies Record<keyof ContainerToolPaths, true>)

function absolutePath(field: string, value: unknown, fallback: string): string {
	if (value === undefined) return fallback
	if (typeof value !== 'string' || value === '' || !isAbsolute(value)) {
		throw CONFIG_SITE.refuse(field, 'an absolute path', describeReceived(value))
	}
	return value
}

/** The ready wait and warm pool, the settings every container runtime (Docker's too) shares. */
export function resolveContainerReadiness(raw: Readonly<Record<string, unknown>>): {
	readonly readyTimeoutMs: number
	readonly readyPollIntervalMs: number
	readonly warmPoolSize: number
} {
	return {
		readyTimeoutMs:
			optionalDurationMs(CONFIG_SITE, 'backend.readyTimeoutMs', raw.readyTimeoutMs) ??
			DEFAULT_CONTAINER_READY_TIMEOUT_MS,
		readyPollIntervalMs:
			optionalDurationMs(CONFIG_SITE, 'backend.readyPollIntervalMs', raw.readyPollIntervalMs) ??
			DEFAULT_CONTAINER_READY_POLL_INTERVAL_MS,
		warmPoolSize:
			optionalInteger(CONFIG_SITE, 'backend.warmPoolSize', raw.warmPoolSize, {
				min: 0,
				max: MAX_CONTAINER_WARM_POOL_SIZE,
			}) ?? 0,
	}
}

/** `backend.labels`: string values under keys without `=`. */
export function resolveContainerLabels(value: unknown): Record<string, string> {
	if (value === undefined) return {}
	if (!isRecord(value))
		throw CONFIG_SITE.refuse('backend.labels', 'an object of strings', describeReceived(value))
	const out: Record<string, string> = {}
	for (const [key, entry] of Object.entries(value)) {
		if (key === '' || key.includes('=') || typeof entry !== 'string') {
			throw CONFIG_SITE.refuse(
				`backend.labels.${key}`,
				'a non-empty key without = and a string value',
				describeReceived(entry),
			)
		}
		out[key] = entry
	}
	return out
}

// long: one check per field of the backend config, read top to bottom against its type
export function resolveContainerBackendConfig(
	config: ContainerBackendConfig,
): ResolvedContainerBackendConfig {
	const raw = requireObject(CONFIG_SITE, 'backend', config)
	refuseUnknownKeys(CONFIG_SITE, 'backend', raw, BACKEND_KEYS)
	requireOneOf(CONFIG_SITE, 'backend.tier', raw.tier, ['container'])
	if (raw.runtime === 'docker') {
		// createContainerSandboxProvider hands 'docker' to resolveDockerBackendConfig first.
		throw new SandboxConfigError(
			'backend.runtime',
			"'docker' is made through a Docker engine (resolveDockerBackendConfig), not an OCI runtime's bundle",
		)
	}
	if (raw.dockerHost !== undefined) {
		throw new SandboxConfigError('backend.dockerHost', "only used with runtime 'docker'")
	}
	const runtime = requireOneOf(
		CONFIG_SITE,
		'backend.runtime',
		raw.runtime ?? 'runc',
		CONTAINER_RUNTIMES,
	)
	if (raw.network !== undefined && raw.network !== 'none') {
		throw new SandboxConfigError(
			'backend.network',
			"only 'none' is supported: every container gets its own network namespace, and the host reaches the agent over a unix socket",
		)
	}
	const image = requireString(CONFIG_SITE, 'backend.image', raw.image)
	if (!isAbsolute(image))
		throw CONFIG_SITE.refuse('backend.image', 'an absolute path', describeReceived(image))
	const tools =
		raw.tools === undefined ? {} : requireObject(CONFIG_SITE, 'backend.tools', raw.tools)
	refuseUnknownKeys(CONFIG_SITE, 'backend.tools', tools, TOOL_KEYS)
	return {
		runtime,
		runtimePath: absolutePath(
			'backend.runtimePath',
			raw.runtimePath,
			DEFAULT_RUNTIME_PATHS[runtime],
		),
		runscPlatform: requireOneOf(
			CONFIG_SITE,
			'backend.runscPlatform',
			raw.runscPlatform ?? 'ptrace',
			['ptrace', 'systrap'] as const,
		),
		image,
		stateDir: absolutePath('backend.stateDir', raw.stateDir, tmpdir()),
		imageCacheDir: absolutePath(
			'backend.imageCacheDir',
			raw.imageCacheDir,
			join(homedir(), '.cache', 'namzu-sandbox', 'container-images'),
		),
		...resolveContainerReadiness(raw),
		maxCheckpoints: resolveMaxCheckpoints(raw.maxCheckpoints),
		sandboxUidRange: resolveSandboxUidRange(raw.sandboxUidRange),
		defaultLimits:
			raw.defaultLimits === undefined
				? 'required'
				: requireOneOf(CONFIG_SITE, 'backend.defaultLimits', raw.defaultLimits, [
						'required',
						'best-effort',
					] as const),
		labels: resolveContainerLabels(raw.labels),
		tools: {
			umoci: absolutePath('backend.tools.umoci', tools.umoci, DEFAULT_UMOCI_PATH),
			mkfsExt4: absolutePath('backend.tools.mkfsExt4', tools.mkfsExt4, DEFAULT_MKFS_EXT4_PATH),
			...networkToolPaths(tools),
		},
	}
}

function networkToolPaths(tools: Readonly<Record<string, unknown>>): NetworkToolPaths {
	const path = (name: keyof NetworkToolPaths) =>
		absolutePath(`backend.tools.${name}`, tools[name], DEFAULT_NETWORK_TOOLS[name])
	return {
		slirp4netns: path('slirp4netns'),
		nft: path('nft'),
		nsenter: path('nsenter'),
		ip: path('ip'),
	}
}
