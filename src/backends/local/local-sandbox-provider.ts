/**
 * The local tier's `SandboxProvider`: every sandbox is the host's `createAgentSandbox` over an agent
 * started by `startLocalInstance`, optionally served from a warm pool. `close()` takes down every
 * sandbox still alive, every start still in flight and the pool.
 */
import type { SandboxCreateConfig, SandboxProvider } from '../../contract/provider.js'
import type { Sandbox } from '../../contract/sandbox.js'
import { agentBundlePath } from '../../host/agent-bundle-path.js'
import { createAgentSandbox } from '../../host/agent-sandbox.js'
import type { SandboxProviderDefaults } from '../../provider-defaults.js'
import { type LocalBackendConfig, resolveLocalBackendConfig } from './local-backend-config.js'
import { LocalProviderClosedError } from './local-errors.js'
import {
	type LocalInstance,
	type LocalInstanceContext,
	startLocalInstance,
} from './local-instance.js'
import {
	canServeFromPool,
	type LocalSandboxSpec,
	resolveLocalSandboxSpec,
} from './local-sandbox-spec.js'
import { WarmPool } from './warm-pool.js'

export const LOCAL_PROVIDER_ID = 'namzu-process-local'
export const LOCAL_PROVIDER_NAME = '@namzu/sandbox:process:bubblewrap'
export const LOCAL_PROVIDER_NAME_UNCONFINED = '@namzu/sandbox:process:none'

export interface LocalProviderHooks {
	/** Told about background failures (warm-pool starts and releases). Must not throw. */
	readonly onBackgroundError?: (error: unknown) => void
	/** Told the id of each warm-pool sandbox once it is started, probed and ready. Must not throw. */
	readonly onWarmSandboxReady?: (id: string) => void
}

export function createLocalSandboxProvider(
	backend: LocalBackendConfig,
	defaults: SandboxProviderDefaults = {},
	hooks: LocalProviderHooks = {},
): SandboxProvider {
	const resolved = resolveLocalBackendConfig(backend)
	const defaultSpec = resolveLocalSandboxSpec({}, defaults)
	let context: LocalInstanceContext | undefined
	// Resolved at the first start, so a provider without a pool touches nothing until create().
	const instanceContext = () => {
		context ??= { backend: resolved, agentPath: agentBundlePath() }
		return context
	}
	const live = new Set<Sandbox>()
	const starting = new Set<AbortController>()
	const pending = new Set<Promise<void>>()
	let closing: Promise<void> | undefined

	const pool =
		resolved.warmPoolSize > 0
			? new WarmPool<LocalInstance>({
					size: resolved.warmPoolSize,
					start: (signal) => startLocalInstance(instanceContext(), defaultSpec, signal),
					...(hooks.onBackgroundError ? { onError: hooks.onBackgroundError } : {}),
					...(hooks.onWarmSandboxReady
						? { onReady: (instance: LocalInstance) => hooks.onWarmSandboxReady?.(instance.id) }
						: {}),
				})
			: undefined
	pool?.fill()

	const handOut = (instance: LocalInstance, spec: LocalSandboxSpec): Sandbox => {
		const sandbox: Sandbox = createAgentSandbox({
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
		live.add(sandbox)
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

	const create = (config: SandboxCreateConfig = {}): Promise<Sandbox> => {
		const run = createOnce(config)
		// close() waits for every create in flight, so nothing it started outlives the provider.
		const settled = run.then(
			() => undefined,
			() => undefined,
		)
		pending.add(settled)
		void settled.finally(() => pending.delete(settled))
		return run
	}

	const createOnce = async (config: SandboxCreateConfig): Promise<Sandbox> => {
		if (closing) throw new LocalProviderClosedError()
		const signal = config.signal
		signal?.throwIfAborted()
		const spec = resolveLocalSandboxSpec(config, defaults)
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
		close,
		[Symbol.asyncDispose]: close,
	}
}
