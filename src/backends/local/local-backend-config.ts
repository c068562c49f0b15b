/**
 * `backend` settings of the local tier and their validation. Validation happens at provider
 * construction so a bad value fails before anything is started; each refusal names the field.
 */
import { tmpdir } from 'node:os'
import { isAbsolute } from 'node:path'
import { SandboxConfigError } from '../../contract/errors.js'
import type { DefaultLimitsMode } from './cgroup-limits.js'
import { DEFAULT_NETWORK_TOOLS, type NetworkToolPaths } from './local-network.js'
import { DEFAULT_MKFS_EXT4_PATH } from './workspace-disk.js'

export type LocalIsolation = 'bubblewrap' | 'none'

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
	 * Every sandbox is bounded by default (memory, tasks, CPU share; see the README). `required`
	 * (default): a host that cannot enforce those defaults refuses `create()` with
	 * `DefaultLimitsUnavailableError`. `best-effort`: such a host runs sandboxes without the bounds it
	 * cannot enforce — an explicit opt-out; limits the caller asks for are always enforced or refused.
	 */
	readonly defaultLimits?: DefaultLimitsMode
	/** Absolute paths of the helpers allow-all networking and `diskLimitMb` use. Never searched on PATH. */
	readonly tools?: LocalToolPaths
}

export interface LocalToolPaths {
	/** Default `/usr/bin/slirp4netns`. */
	readonly slirp4netns?: string
	/** Default `/usr/sbin/nft`. */
	readonly nft?: string
	/** Default `/usr/bin/nsenter`. */
	readonly nsenter?: string
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
	readonly defaultLimits: DefaultLimitsMode
	readonly tools: ResolvedLocalToolPaths
}

export const DEFAULT_BWRAP_PATH = '/usr/bin/bwrap'
export const DEFAULT_READY_TIMEOUT_MS = 10_000
/** Largest value a Node timer accepts; anything above fires immediately. */
const MAX_TIMER_MS = 2_147_483_647
/** A pool larger than this is almost certainly a unit mistake (each member is a live node process). */
export const MAX_WARM_POOL_SIZE = 64

function absolutePath(field: string, value: unknown, fallback: string): string {
	if (value === undefined) return fallback
	if (typeof value !== 'string' || value === '' || !isAbsolute(value)) {
		throw new SandboxConfigError(field, `must be an absolute path, got ${JSON.stringify(value)}`)
	}
	return value
}

function integerIn(field: string, value: unknown, fallback: number, min: number, max: number) {
	if (value === undefined) return fallback
	if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
		throw new SandboxConfigError(
			field,
			`must be an integer in ${min}..${max}, got ${JSON.stringify(value)}`,
		)
	}
	return value
}

export function resolveLocalBackendConfig(config: LocalBackendConfig): ResolvedLocalBackendConfig {
	const raw: { readonly tier?: unknown; readonly isolation?: unknown } = config
	if (raw.tier !== 'process') {
		throw new SandboxConfigError(
			'backend.tier',
			`must be 'process', got ${JSON.stringify(raw.tier)}`,
		)
	}
	const isolation = raw.isolation ?? 'bubblewrap'
	if (isolation !== 'bubblewrap' && isolation !== 'none') {
		throw new SandboxConfigError(
			'backend.isolation',
			`must be 'bubblewrap' or 'none', got ${JSON.stringify(isolation)}`,
		)
	}
	return {
		isolation,
		bwrapPath: absolutePath('backend.bwrapPath', config.bwrapPath, DEFAULT_BWRAP_PATH),
		nodePath: absolutePath('backend.nodePath', config.nodePath, process.execPath),
		warmPoolSize: integerIn('backend.warmPoolSize', config.warmPoolSize, 0, 0, MAX_WARM_POOL_SIZE),
		stateDir: absolutePath('backend.stateDir', config.stateDir, tmpdir()),
		readyTimeoutMs: integerIn(
			'backend.readyTimeoutMs',
			config.readyTimeoutMs,
			DEFAULT_READY_TIMEOUT_MS,
			1,
			MAX_TIMER_MS,
		),
		defaultLimits: defaultLimitsMode(config.defaultLimits),
		tools: toolPaths(config.tools),
	}
}

function defaultLimitsMode(value: unknown): DefaultLimitsMode {
	if (value === undefined || value === 'required' || value === 'best-effort') {
		return value ?? 'required'
	}
	throw new SandboxConfigError(
		'backend.defaultLimits',
		`must be 'required' or 'best-effort', got ${JSON.stringify(value)}`,
	)
}

function toolPaths(tools: unknown): ResolvedLocalToolPaths {
	if (
		tools !== undefined &&
		(typeof tools !== 'object' || tools === null || Array.isArray(tools))
	) {
		throw new SandboxConfigError('backend.tools', `must be an object, got ${JSON.stringify(tools)}`)
	}
	const given: LocalToolPaths = tools ?? {}
	return {
		slirp4netns: absolutePath(
			'backend.tools.slirp4netns',
			given.slirp4netns,
			DEFAULT_NETWORK_TOOLS.slirp4netns,
		),
		nft: absolutePath('backend.tools.nft', given.nft, DEFAULT_NETWORK_TOOLS.nft),
		nsenter: absolutePath('backend.tools.nsenter', given.nsenter, DEFAULT_NETWORK_TOOLS.nsenter),
		mkfsExt4: absolutePath('backend.tools.mkfsExt4', given.mkfsExt4, DEFAULT_MKFS_EXT4_PATH),
	}
}
