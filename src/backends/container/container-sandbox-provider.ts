/**
 * The container tier's `SandboxProvider`: every sandbox is the host's one `AgentSandbox` over the
 * same agent, started in an OCI container by `startContainerInstance`, optionally served from a
 * warm pool of started and probed containers (the local tier's `WarmPool`). `close()` takes down
 * every sandbox still alive, every start in flight and the pool. What sandboxes of dead hosts left
 * in the state directory is reaped once in the background by the local tier's reaper (a container
 * sandbox's record is the same record).
 */
import {
	CONFIG_SITE,
	optionalFunction,
	optionalObject,
} from '../../contract/argument-validators.js'
import { SandboxBackendNotImplementedError } from '../../contract/errors.js'
import type { SandboxProvider } from '../../contract/provider.js'
import { agentBundlePath } from '../../host/sandbox/agent-bundle-path.js'
import { createAgentSandbox } from '../../host/sandbox/agent-sandbox.js'
import type { SandboxProviderDefaults } from '../../provider-defaults.js'
import type { LocalSandbox } from '../local/local-sandbox.js'
import { collectLocalGarbage } from '../local/reap-leftovers.js'
import { WarmPool } from '../local/warm-pool.js'
import {
	type ACIStandbyPoolBackendConfig,
	type ContainerBackendConfig,
	resolveContainerBackendConfig,
} from './container-backend-config.js'
import {
	ContainerProviderClosedError,
	ContainerSandboxLayoutValidationError,
} from './container-errors.js'
import { type ContainerImage, resolveContainerImage } from './container-image.js'
import {
	type ContainerInstance,
	type ContainerInstanceContext,
	startContainerInstance,
} from './container-instance.js'
import {
	type ContainerSandboxLayout,
	layoutMounts,
	type ResolvedContainerSandboxLayout,
	resolveLayout,
} from './container-layout.js'
import {
	type ContainerSandboxCreateConfig,
	type ContainerSandboxSpec,
	canServeFromContainerPool,
	resolveContainerSandboxSpec,
} from './container-sandbox-spec.js'

/** A container sandbox: the same members as a local one (the same agent serves both). */
export type ContainerSandbox = LocalSandbox

/** Callbacks for what the container provider does in the background. */
export interface ContainerProviderHooks {
	/** Told about background failures (warm-pool starts and releases, the reaper). Must not throw. */
	readonly onBackgroundError?: (error: unknown) => void
	/** Told the id of each warm-pool sandbox once it is started, probed and ready. Must not throw. */
	readonly onWarmSandboxReady?: (id: string) => void
}

export interface ContainerSandboxProvider extends SandboxProvider {
	create(config?: ContainerSandboxCreateConfig): Promise<ContainerSandbox>
}

/** `SandboxProvider.id` = `namzu-container-<runtime>`. */
export function containerProviderId(runtime: string): string {
	return `namzu-container-${runtime}`
}

/** `SandboxProvider.name` = `@namzu/sandbox:container:<runtime>`. */
export function containerProviderName(runtime: string): string {
	return `@namzu/sandbox:container:${runtime}`
}

/** What the tier itself refuses of a valid layout, every reason at once. */
export function containerLayoutRefusals(
	layout: ResolvedContainerSandboxLayout,
	warmPoolSize: number,
): string[] {
	const reasons: string[] = []
	const entries = layoutMounts(layout)
	for (const entry of entries) {
		if (entry.mount.source.type === 'azureFileShare') {
			reasons.push(
				`${entry.field}.source: 'azureFileShare' is served by the ACI standby pool only; use 'hostDir' or 'inImage'`,
			)
		}
	}
	const writableHostDirs = entries.filter(
		(entry) => entry.writable && entry.mount.source.type === 'hostDir',
	)
	if (writableHostDirs.length > 1) {
		reasons.push(
			`${writableHostDirs.map((entry) => entry.field).join(' and ')} are both writable host directories; a sandbox is handed one (make the other 'inImage')`,
		)
	}
	if (writableHostDirs.length > 0 && warmPoolSize > 0) {
		reasons.push(
			`${writableHostDirs[0]?.field} is a writable host directory, which one live sandbox holds at a time; a warm pool (backend.warmPoolSize) would hold it ahead of create()`,
		)
	}
	return reasons
}

/**
 * The container tier's provider; `createSandboxProvider({ backend: { tier: 'container', … }, layout })`
 * returns the same. Validates the backend and the layout at once and contacts nothing until
 * `create()` (or the warm pool's first start).
 */
export function createContainerSandboxProvider(
	backend: ContainerBackendConfig,
	layout: ContainerSandboxLayout,
	defaults: SandboxProviderDefaults = {},
	hooks: ContainerProviderHooks = {},
): ContainerSandboxProvider {
	const resolved = resolveContainerBackendConfig(backend)
	const resolvedLayout = resolveLayout(layout)
	const refusals = containerLayoutRefusals(resolvedLayout, resolved.warmPoolSize)
	if (refusals.length > 0) throw new ContainerSandboxLayoutValidationError(refusals)
	const defaultSpec = resolveContainerSandboxSpec({}, defaults)
	const givenHooks = optionalObject(CONFIG_SITE, 'hooks', hooks)
	optionalFunction(CONFIG_SITE, 'hooks.onBackgroundError', givenHooks.onBackgroundError)
	optionalFunction(CONFIG_SITE, 'hooks.onWarmSandboxReady', givenHooks.onWarmSandboxReady)
	let image: Promise<ContainerImage> | undefined
	const context: ContainerInstanceContext = {
		backend: resolved,
		layout: resolvedLayout,
		image: () => {
			image ??= resolveContainerImage({
				image: resolved.image,
				cacheDir: resolved.imageCacheDir,
				umociPath: resolved.tools.umoci,
			})
			// A refused image is refused again on the next create, not cached as a failure.
			image.catch(() => {
				image = undefined
			})
			return image
		},
		agentPath: agentBundlePath(),
	}
	const live = new Set<ContainerSandbox>()
	const starting = new Set<AbortController>()
	const pending = new Set<Promise<void>>()
	let closing: Promise<void> | undefined
	let reaping: Promise<void> | undefined
	const reapOnce = () => {
		reaping ??= collectLocalGarbage({
			stateDir: resolved.stateDir,
			nodePath: process.execPath,
			...(hooks.onBackgroundError ? { onError: hooks.onBackgroundError } : {}),
		}).then(
			() => undefined,
			(error: unknown) => hooks.onBackgroundError?.(error),
		)
		return reaping
	}
	const pool =
		resolved.warmPoolSize > 0
			? new WarmPool<ContainerInstance>({
					size: resolved.warmPoolSize,
					start: (signal) => startContainerInstance(context, defaultSpec, signal),
					...(hooks.onBackgroundError ? { onError: hooks.onBackgroundError } : {}),
					...(hooks.onWarmSandboxReady
						? { onReady: (instance: ContainerInstance) => hooks.onWarmSandboxReady?.(instance.id) }
						: {}),
				})
			: undefined
	if (pool) void reapOnce()
	pool?.fill()

	const handOut = (instance: ContainerInstance, spec: ContainerSandboxSpec): ContainerSandbox => {
		const sandbox: ContainerSandbox = createAgentSandbox({
			id: instance.id,
			transport: instance.transport,
			rootDir: instance.rootDir,
			environment: 'linux-namespace',
			...(spec.timeoutMs === undefined ? {} : { defaultTimeoutMs: spec.timeoutMs }),
			// An unconfirmable cancellation retires the whole container: every process dies with it.
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

	const startCold = async (spec: ContainerSandboxSpec, signal: AbortSignal | undefined) => {
		const controller = new AbortController()
		const forward = () => controller.abort(signal?.reason)
		signal?.addEventListener('abort', forward, { once: true })
		starting.add(controller)
		try {
			return await startContainerInstance(context, spec, controller.signal)
		} finally {
			signal?.removeEventListener('abort', forward)
			starting.delete(controller)
		}
	}

	const createOnce = async (
		config: ContainerSandboxCreateConfig,
		spec: ContainerSandboxSpec,
	): Promise<ContainerSandbox> => {
		if (closing) throw new ContainerProviderClosedError()
		const signal = config.signal
		signal?.throwIfAborted()
		const warm = pool && canServeFromContainerPool(defaultSpec, spec) ? pool.take() : undefined
		const instance = warm ?? (await startCold(spec, signal))
		if (closing || signal?.aborted) {
			await instance.release().catch(() => undefined)
			if (signal?.aborted) throw signal.reason
			throw new ContainerProviderClosedError()
		}
		return handOut(instance, spec)
	}

	const create = (config: ContainerSandboxCreateConfig = {}): Promise<ContainerSandbox> => {
		let spec: ContainerSandboxSpec
		try {
			spec = resolveContainerSandboxSpec(config, defaults)
		} catch (error) {
			return Promise.reject(error)
		}
		const run = createOnce(config, spec)
		void run.then(reapOnce, reapOnce)
		const settled = run.then(
			() => undefined,
			() => undefined,
		)
		pending.add(settled)
		void settled.finally(() => pending.delete(settled))
		return run
	}

	const closeAll = async () => {
		for (const controller of starting) controller.abort(new ContainerProviderClosedError())
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
		id: containerProviderId(resolved.runtime),
		name: containerProviderName(resolved.runtime),
		environment: 'linux-namespace',
		workspaceModes: ['ephemeral'],
		create,
		close,
		[Symbol.asyncDispose]: close,
	}
}

/** The ACI standby pool arm: typed, validated as an object, and refused here by name. */
export function refuseACIStandbyPool(backend: ACIStandbyPoolBackendConfig): never {
	throw new SandboxBackendNotImplementedError(`container/${String(backend.runtime)}`)
}
