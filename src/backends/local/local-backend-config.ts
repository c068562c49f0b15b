/**
 * `backend` settings of the local tier and their validation. Validation happens at provider
 * construction so a bad value fails before anything is started; each refusal names the field.
 */
import { tmpdir } from 'node:os'
import { isAbsolute } from 'node:path'
import { SandboxConfigError } from '../../contract/errors.js'
import { validatePathList } from './path-options.js'
import { resolveSandboxUidRange, type SandboxUidRange } from './sandbox-identity.js'

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
	 * Host uids handed out one per sandbox when the host runs as root (each sandbox runs as its
	 * own unprivileged uid; gid = uid). Default `{ first: 0x70000000, count: 65536 }`; `first`
	 * must be ≥ 65536. Providers sharing a range must share a `stateDir` (the locks live there).
	 */
	readonly sandboxUidRange?: SandboxUidRange
	/** Host paths bound read-only at the same path into every sandbox (e.g. a toolchain). */
	readonly readOnlyPaths?: readonly string[]
	/** Paths masked in every sandbox even though a bind would expose them. */
	readonly hiddenPaths?: readonly string[]
}

export interface ResolvedLocalBackendConfig {
	readonly isolation: LocalIsolation
	readonly bwrapPath: string
	readonly nodePath: string
	readonly warmPoolSize: number
	readonly stateDir: string
	readonly readyTimeoutMs: number
	readonly sandboxUidRange: SandboxUidRange
	readonly readOnlyPaths: readonly string[]
	readonly hiddenPaths: readonly string[]
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
		sandboxUidRange: resolveSandboxUidRange(config.sandboxUidRange),
		readOnlyPaths: validatePathList('backend.readOnlyPaths', config.readOnlyPaths),
		hiddenPaths: validatePathList('backend.hiddenPaths', config.hiddenPaths),
	}
}
