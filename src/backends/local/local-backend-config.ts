/**
 * `backend` settings of the local tier and their validation. Validation happens at provider
 * construction so a bad value fails before anything is started; each refusal names the field.
 */

import { tmpdir } from 'node:os'
import { isAbsolute } from 'node:path'
import { isRecord } from '../../common/is-record.js'
import {
	CONFIG_SITE,
	describeReceived,
	optionalDurationMs,
	optionalInteger,
	optionalObject,
	refuseUnknownKeys,
	requireObject,
	requireOneOf,
} from '../../contract/argument-validators.js'
import type { DefaultLimitsMode } from '../machine/cgroups/cgroup-limits.js'
import type { LocalIsolation } from '../machine/claims/sandbox-descriptor.js'
import { resolveSandboxUidRange, type SandboxUidRange } from '../machine/claims/sandbox-identity.js'
import { DEFAULT_NETWORK_TOOLS, type NetworkToolPaths } from '../machine/network/egress-network.js'
import { resolveMaxCheckpoints } from '../machine/snapshots/checkpoint-verbs.js'
import { validatePathList } from '../machine/spec/path-options.js'
import { DEFAULT_MKFS_EXT4_PATH } from '../machine/workspace/workspace-disk.js'

/** The local tier's backend settings: `createSandboxProvider({ backend: { tier: 'process', … } })`. */
export interface LocalBackendConfig {
	readonly tier: 'process'
	/**
	 * `bubblewrap` (default) confines the agent in fresh namespaces, and every `create()` proves the
	 * guest deprivileged before resolving. `none` runs it as a plain child process for development:
	 * only ever chosen explicitly, never as a fallback; it reports environment `basic`, skips the
	 * privilege probe (the host's own privileges could never pass it) and confines nothing.
	 */
	readonly isolation?: LocalIsolation
	/** Absolute path of bwrap, default `/usr/bin/bwrap`. Never searched on PATH. */
	readonly bwrapPath?: string
	/** Node binary that runs the agent, default the host's own (`process.execPath`). */
	readonly nodePath?: string
	/** Sandboxes kept started and probed ahead of `create()`, default 0. */
	readonly warmPoolSize?: number
	/** Parent of the per-sandbox `namzu-sbx-<id>/` directories, default `os.tmpdir()`. */
	readonly stateDir?: string
	/** Budget for the agent to answer `healthz` after launch, default 10 000 ms. */
	readonly readyTimeoutMs?: number
	/**
	 * The checkpoints this provider's store keeps at most (default `DEFAULT_MAX_CHECKPOINTS`, 256):
	 * past it a capture is refused (`CheckpointLimitError`) until one is deleted.
	 */
	readonly maxCheckpoints?: number
	/**
	 * Host uids handed out one per sandbox when the host runs as root (each sandbox runs as its
	 * own unprivileged uid; gid = uid). Default `{ first: 0x70000000, count: 65536 }`; `first`
	 * must be ≥ 65536. Providers sharing a range must share a `stateDir` (the locks live there).
	 */
	readonly sandboxUidRange?: SandboxUidRange
	/** Host paths bound read-only at the same path into every sandbox (e.g. a toolchain). */
	readonly readOnlyPaths?: readonly string[]
	/** Paths masked in every sandbox even though a bind would expose them. */
	readonly hiddenPaths?: readonly string[]
	/**
	 * Every sandbox is bounded by default (memory, tasks, CPU share; see the README). `required`
	 * (default): a host that cannot enforce those defaults refuses `create()` with
	 * `DefaultLimitsUnavailableError`. `best-effort`: such a host runs sandboxes without the bounds it
	 * cannot enforce — an explicit opt-out; limits the caller asks for are always enforced or refused.
	 */
	readonly defaultLimits?: DefaultLimitsMode
	/** Absolute paths of the helpers allow-all networking and `diskLimitMb` use. Never searched on PATH. */
	readonly tools?: LocalToolPaths
}

/** Absolute paths of the host programs the local tier runs (never looked up on `PATH`). */
export interface LocalToolPaths {
	/** Default `/usr/bin/slirp4netns`. */
	readonly slirp4netns?: string
	/** Default `/usr/sbin/nft`. */
	readonly nft?: string
	/** Default `/usr/bin/nsenter`. */
	readonly nsenter?: string
	/** Default `/usr/sbin/ip` (iproute2): the capture route of `static` / `resolver` egress. */
	readonly ip?: string
	/** Default `/usr/sbin/mkfs.ext4`. */
	readonly mkfsExt4?: string
}

export interface ResolvedLocalToolPaths extends NetworkToolPaths {
	readonly mkfsExt4: string
}

export interface ResolvedLocalBackendConfig {
	readonly isolation: LocalIsolation
	readonly bwrapPath: string
	readonly nodePath: string
	readonly warmPoolSize: number
	readonly stateDir: string
	readonly readyTimeoutMs: number
	readonly maxCheckpoints: number
	readonly sandboxUidRange: SandboxUidRange
	readonly readOnlyPaths: readonly string[]
	readonly hiddenPaths: readonly string[]
	readonly defaultLimits: DefaultLimitsMode
	readonly tools: ResolvedLocalToolPaths
}

/** Where the local tier looks for bubblewrap unless `bwrapPath` says otherwise (never `PATH`). */
export const DEFAULT_BWRAP_PATH = '/usr/bin/bwrap'
/** How long `create()` waits for a new sandbox's agent to answer, unless `readyTimeoutMs` is set. */
export const DEFAULT_READY_TIMEOUT_MS = 10_000
/** A pool larger than this is almost certainly a unit mistake (each member is a live node process). */
export const MAX_WARM_POOL_SIZE = 64
// Every key of each type, checked complete by the compiler: a key outside them is refused by name.
const BACKEND_KEYS = Object.keys({
	tier: true,
	isolation: true,
	bwrapPath: true,
	nodePath: true,
	warmPoolSize: true,
	stateDir: true,
	readyTimeoutMs: true,
	maxCheckpoints: true,
	sandboxUidRange: true,
	readOnlyPaths: true,
	hiddenPaths: true,
	defaultLimits: true,
	tools: true,
} satisfies Record<keyof LocalBackendConfig, true>)
const TOOL_KEYS = Object.keys({
	slirp4netns: true,
	nft: true,
	nsenter: true,
	ip: true,
	mkfsExt4: true,
} satisfies Record<keyof LocalToolPaths, true>)
const UID_RANGE_KEYS = Object.keys({ first: true, count: true } satisfies Record<
	keyof SandboxUidRange,
	true
>)
const DEFAULT_LIMITS_MODES: readonly DefaultLimitsMode[] = ['required', 'best-effort']

function absolutePath(field: string, value: unknown, fallback: string): string {
	if (value === undefined) return fallback
	if (typeof value !== 'string' || value === '' || !isAbsolute(value)) {
		throw CONFIG_SITE.refuse(field, 'an absolute path', describeReceived(value))
	}
	return value
}

export function resolveLocalBackendConfig(config: LocalBackendConfig): ResolvedLocalBackendConfig {
	const raw = requireObject(CONFIG_SITE, 'backend', config)
	refuseUnknownKeys(CONFIG_SITE, 'backend', raw, BACKEND_KEYS)
	if (isRecord(raw.sandboxUidRange)) {
		refuseUnknownKeys(CONFIG_SITE, 'backend.sandboxUidRange', raw.sandboxUidRange, UID_RANGE_KEYS)
	}
	requireOneOf(CONFIG_SITE, 'backend.tier', raw.tier, ['process'])
	const isolation = requireOneOf(CONFIG_SITE, 'backend.isolation', raw.isolation ?? 'bubblewrap', [
		'bubblewrap',
		'none',
	] as const)
	return {
		isolation,
		bwrapPath: absolutePath('backend.bwrapPath', config.bwrapPath, DEFAULT_BWRAP_PATH),
		nodePath: absolutePath('backend.nodePath', config.nodePath, process.execPath),
		warmPoolSize:
			optionalInteger(CONFIG_SITE, 'backend.warmPoolSize', config.warmPoolSize, {
				min: 0,
				max: MAX_WARM_POOL_SIZE,
			}) ?? 0,
		stateDir: absolutePath('backend.stateDir', config.stateDir, tmpdir()),
		readyTimeoutMs:
			optionalDurationMs(CONFIG_SITE, 'backend.readyTimeoutMs', config.readyTimeoutMs) ??
			DEFAULT_READY_TIMEOUT_MS,
		maxCheckpoints: resolveMaxCheckpoints(raw.maxCheckpoints),
		sandboxUidRange: resolveSandboxUidRange(config.sandboxUidRange),
		readOnlyPaths: validatePathList('backend.readOnlyPaths', config.readOnlyPaths),
		hiddenPaths: validatePathList('backend.hiddenPaths', config.hiddenPaths),
		defaultLimits:
			raw.defaultLimits === undefined
				? 'required'
				: requireOneOf(
						CONFIG_SITE,
						'backend.defaultLimits',
						raw.defaultLimits,
						DEFAULT_LIMITS_MODES,
					),
		tools: toolPaths(raw.tools),
	}
}

function toolPaths(value: unknown): ResolvedLocalToolPaths {
	const given = optionalObject(CONFIG_SITE, 'backend.tools', value)
	refuseUnknownKeys(CONFIG_SITE, 'backend.tools', given, TOOL_KEYS)
	const tool = (name: keyof ResolvedLocalToolPaths, fallback: string) =>
		absolutePath(`backend.tools.${name}`, given[name], fallback)
	return {
		slirp4netns: tool('slirp4netns', DEFAULT_NETWORK_TOOLS.slirp4netns),
		nft: tool('nft', DEFAULT_NETWORK_TOOLS.nft),
		nsenter: tool('nsenter', DEFAULT_NETWORK_TOOLS.nsenter),
		ip: tool('ip', DEFAULT_NETWORK_TOOLS.ip),
		mkfsExt4: tool('mkfsExt4', DEFAULT_MKFS_EXT4_PATH),
	}
}
