/**
 * The local tier's `SandboxProvider`: every sandbox is the host's `createAgentSandbox` over an agent
 * started by `startLocalInstance`, optionally served from a warm pool. `close()` takes down every
 * sandbox still alive, every start still in flight and the pool — except kept-alive sandboxes
 * (`keepAlive: true`), which outlive the provider and its process by design; `open(id)` reopens
 * them, `list()` shows them. What sandboxes of dead hosts left in the state directory is reaped in
 * the background once the first `create()` settles, or as the warm pool starts (`reap-leftovers.ts`).
 */

import {
	CONFIG_SITE,
	callSite,
	optionalFunction,
	optionalObject,
	signalOfOptions,
} from '../../contract/argument-validators.js'
import type { SandboxProvider } from '../../contract/provider.js'
import { agentBundlePath } from '../../host/sandbox/agent-bundle-path.js'
import { createAgentSandbox } from '../../host/sandbox/agent-sandbox.js'
import type { SandboxProviderDefaults } from '../../provider-defaults.js'
import { type LocalBackendConfig, resolveLocalBackendConfig } from './local-backend-config.js'
import type { EgressTestSeam } from './local-egress-proxy.js'
import { LocalProviderClosedError } from './local-errors.js'
import {
	type LocalInstance,
	type LocalInstanceContext,
	startLocalInstance,
} from './local-instance.js'
import type { LocalSandbox } from './local-sandbox.js'
import { type LocalSandboxListing, listLocalSandboxes } from './local-sandbox-registry.js'
import {
	canServeFromPool,
	type LocalSandboxCreateConfig,
	type LocalSandboxSpec,
	resolveLocalSandboxSpec,
} from './local-sandbox-spec.js'
import { openLocalSandbox } from './open-local-sandbox.js'
import { collectLocalGarbage } from './reap-leftovers.js'
import { WarmPool } from './warm-pool.js'

/** `SandboxProvider.id` of the local tier. */
export const LOCAL_PROVIDER_ID = 'namzu-process-local'
/** `SandboxProvider.name` of the local tier under bubblewrap. */
export const LOCAL_PROVIDER_NAME = '@namzu/sandbox:process:bubblewrap'
/** `SandboxProvider.name` of the local tier under `isolation: 'none'` (no sandbox at all). */
export const LOCAL_PROVIDER_NAME_UNCONFINED = '@namzu/sandbox:process:none'

/** Callbacks for what the provider does in the background. */
export interface LocalProviderHooks {
	/** Told about background failures (warm-pool starts and releases). Must not throw. */
	readonly onBackgroundError?: (error: unknown) => void
	/** Told the id of each warm-pool sandbox once it is started, probed and ready. Must not throw. */
	readonly onWarmSandboxReady?: (id: string) => void
	/**
	 * @internal Tests only: how the egress proxy resolves names and which CAs it trusts upstream.
	 * The private-range deny set still applies to whatever this resolves to.
	 */
	readonly egressTestSeam?: EgressTestSeam
}

/** The local tier's provider: typed `create()`, plus reopening and listing kept-alive sandboxes. */
export interface LocalSandboxProvider extends SandboxProvider {
	create(config?: LocalSandboxCreateConfig): Promise<LocalSandbox>
	/** Reopens a kept-alive sandbox of this provider's `stateDir` by id (see `openLocalSandbox`). */
	open(id: string, options?: { readonly signal?: AbortSignal }): Promise<LocalSandbox>
	/** The kept-alive sandboxes recorded in this provider's `stateDir`. */
	list(options?: { readonly signal?: AbortSignal }): Promise<LocalSandboxListing[]>
}

/** The local tier's provider; `createSandboxProvider({ backend: { tier: 'process' } })` returns the same. */
export function createLocalSandboxProvider(
	backend: LocalBackendConfig,
	defaults: SandboxProviderDefaults = {},
	hooks: LocalProviderHooks = {},
): LocalSandboxProvider {
	const resolved = resolveLocalBackendConfig(backend)
	const defaultSpec = resolveLocalSandboxSpec({}, defaults)
	const givenHooks = optionalObject(CONFIG_SITE, 'hooks', hooks)
	optionalFunction(CONFIG_SITE, 'hooks.onBackgroundError', givenHooks.onBackgroundError)
	optionalFunction(CONFIG_SITE, 'hooks.onWarmSandboxReady', givenHooks.onWarmSandboxReady)
	let context: LocalInstanceContext | undefined
	// Resolved at the first start, so a provider without a pool touches nothing until create().
	const instanceContext = () => {
		context ??= {
			backend: resolved,
			agentPath: agentBundlePath(),
			...(hooks.egressTestSeam ? { egressSeam: hooks.egressTestSeam } : {}),
		}
		return context
	}
	const live = new Set<LocalSandbox>()
	const starting = new Set<AbortController>()
	const pending = new Set<Promise<void>>()
	let closing: Promise<void> | undefined
	let reaping: Promise<void> | undefined
	// What sandboxes of dead hosts left in this state directory (and expired kept-alive ones) is
	// reaped once, in the background: once the first create() settles, or as the warm pool starts.
	const reapOnce = () => {
		reaping ??= collectLocalGarbage({
			stateDir: resolved.stateDir,
			nodePath: resolved.nodePath,
			...(hooks.onBackgroundError ? { onError: hooks.onBackgroundError } : {}),
		}).then(
			() => undefined,
			(error: unknown) => hooks.onBackgroundError?.(error),
		)
		return reaping
	}

	// A proxied sandbox is never served from the pool (its proxy is its creator's): none is kept.
	const pool =
		resolved.warmPoolSize > 0 && defaultSpec.egress !== 'proxied'
			? new WarmPool<LocalInstance>({
					size: resolved.warmPoolSize,
					start: (signal) => startLocalInstance(instanceContext(), defaultSpec, signal),
					...(hooks.onBackgroundError ? { onError: hooks.onBackgroundError } : {}),
					...(hooks.onWarmSandboxReady
						? { onReady: (instance: LocalInstance) => hooks.onWarmSandboxReady?.(instance.id) }
						: {}),
				})
			: undefined
	if (pool) void reapOnce()
	pool?.fill()

	const handOut = (instance: LocalInstance, spec: LocalSandboxSpec): LocalSandbox => {
		const sandbox: LocalSandbox = createAgentSandbox({
			id: instance.id,
			transport: instance.transport,
			rootDir: instance.rootDir,
			environment: instance.environment,
			...(spec.timeoutMs === undefined ? {} : { defaultTimeoutMs: spec.timeoutMs }),
			// An unconfirmable cancellation retires the whole unit: every process dies with it.
			retire: async (error) => {
				try {
					await instance.release()
					return { accepted: true, reason: error.message }
				} catch (cause) {
					return {
						accepted: false,
						error: cause instanceof Error ? cause : new Error(String(cause)),
					}
				}
			},
			release: async () => {
				try {
					await instance.release()
				} finally {
					live.delete(sandbox)
				}
			},
		})
		// A kept-alive sandbox is not the provider's to take down on close(): it outlives us.
		if (instance.descriptor === undefined) live.add(sandbox)
		return sandbox
	}

	const startCold = async (spec: LocalSandboxSpec, signal: AbortSignal | undefined) => {
		// One controller per start: the caller's signal or close() aborts it.
		const controller = new AbortController()
		const forward = () => controller.abort(signal?.reason)
		signal?.addEventListener('abort', forward, { once: true })
		starting.add(controller)
		try {
			return await startLocalInstance(instanceContext(), spec, controller.signal)
		} finally {
			signal?.removeEventListener('abort', forward)
			starting.delete(controller)
		}
	}

	const create = (config: LocalSandboxCreateConfig = {}): Promise<LocalSandbox> => {
		let spec: LocalSandboxSpec
		try {
			// Checked before anything else runs: a refused config starts, reaps and creates nothing.
			spec = resolveLocalSandboxSpec(config, defaults)
		} catch (error) {
			return Promise.reject(error)
		}
		const run = createOnce(config, spec)
		// After the first create settles, so the reaper never competes with it for the machine.
		void run.then(reapOnce, reapOnce)
		// close() waits for every create in flight, so nothing it started outlives the provider.
		const settled = run.then(
			() => undefined,
			() => undefined,
		)
		pending.add(settled)
		void settled.finally(() => pending.delete(settled))
		return run
	}

	const createOnce = async (
		config: LocalSandboxCreateConfig,
		spec: LocalSandboxSpec,
	): Promise<LocalSandbox> => {
		if (closing) throw new LocalProviderClosedError()
		const signal = config.signal
		signal?.throwIfAborted()
		const warm = pool && canServeFromPool(defaultSpec, spec) ? pool.take() : undefined
		const instance = warm ?? (await startCold(spec, signal))
		if (closing || signal?.aborted) {
			await instance.release().catch(() => undefined)
			if (signal?.aborted) throw signal.reason
			throw new LocalProviderClosedError()
		}
		return handOut(instance, spec)
	}

	const closeAll = async () => {
		for (const controller of starting) controller.abort(new LocalProviderClosedError())
		await pool?.close()
		while (pending.size > 0) await Promise.all([...pending])
		await reaping
		await Promise.allSettled([...live].map((sandbox) => sandbox.destroy()))
	}

	const close = () => {
		closing ??= closeAll()
		return closing
	}

	return {
		id: LOCAL_PROVIDER_ID,
		name:
			resolved.isolation === 'bubblewrap' ? LOCAL_PROVIDER_NAME : LOCAL_PROVIDER_NAME_UNCONFINED,
		environment: resolved.isolation === 'bubblewrap' ? 'linux-bwrap' : 'basic',
		workspaceModes: ['ephemeral', 'working-directory'],
		create,
		open: async (id, options = {}) => {
			const signal = signalOfOptions(callSite('open'), options)
			return openLocalSandbox(id, {
				stateDir: resolved.stateDir,
				readyTimeoutMs: resolved.readyTimeoutMs,
				...(signal ? { signal } : {}),
			})
		},
		list: async (options = {}) => {
			const signal = signalOfOptions(callSite('list'), options)
			return listLocalSandboxes({ stateDir: resolved.stateDir, ...(signal ? { signal } : {}) })
		},
		close,
		[Symbol.asyncDispose]: close,
	}
}
