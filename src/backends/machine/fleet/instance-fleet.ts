/**
 * The sandboxes one provider holds, for every tier whose sandboxes are started locally (the local
 * tier, the container tier): a create either takes a started member of the warm pool or starts a
 * new one under its own controller (the caller's signal or `close()` aborts it), and hands it out;
 * the reaper runs once, in the background, after the first create settles (or as the pool starts);
 * `close()` aborts the starts in flight, closes the pool, waits for every create, and destroys every
 * sandbox still handed out that the provider owns.
 */
import type { SandboxEnvironment } from '../../../contract/sandbox.js'
import type { ExecOutputBudget } from '../../../host/exec/exec-output-budget.js'
import {
	type AgentSandbox,
	type AgentSandboxOptions,
	createAgentSandbox,
} from '../../../host/sandbox/agent-sandbox.js'
import type { AgentTransport } from '../../../host/transport/agent-transport.js'
import { WarmPool, type WarmPoolMember } from './warm-pool.js'

export interface FleetInstance extends WarmPoolMember {
	readonly id: string
}

export interface HandedOut<T> {
	readonly sandbox: T
	/** Whether `close()` takes it down (a kept-alive sandbox outlives its provider). */
	readonly owned: boolean
}

export interface InstanceFleetOptions<I extends FleetInstance, S, T> {
	readonly start: (spec: S, signal: AbortSignal) => Promise<I>
	/** The warm pool: its size, the spec its members start with, and which creates it serves. */
	readonly pool?: {
		readonly size: number
		readonly spec: S
		readonly serves: (spec: S) => boolean
	}
	/** What sandboxes of dead hosts left behind; must not reject. */
	readonly reap: () => Promise<void>
	/** The sandbox for a started instance; `forget` is to be called once it is destroyed. */
	readonly handOut: (instance: I, spec: S, forget: () => void) => HandedOut<T>
	readonly closedError: () => Error
	readonly onBackgroundError?: (error: unknown) => void
	readonly onWarmSandboxReady?: (id: string) => void
}

/**
 * A fleet's `reap` over one tier's reaper: the failures it reports one by one and its own failure
 * both go to `onBackgroundError`, so the reap never rejects.
 */
export function reapReportingTo(
	onBackgroundError: ((error: unknown) => void) | undefined,
	reap: (report: { readonly onError?: (error: unknown) => void }) => Promise<unknown>,
): () => Promise<void> {
	const report = onBackgroundError ? { onError: onBackgroundError } : {}
	return () =>
		reap(report).then(
			() => undefined,
			(error: unknown) => onBackgroundError?.(error),
		)
}

export interface InstanceFleet<S, T> {
	create(spec: S, signal?: AbortSignal): Promise<T>
	close(): Promise<void>
}

/** The fleet's warm pool, if it has one: its members start with the pool's spec. */
function warmPoolOf<I extends FleetInstance, S, T>(
	options: InstanceFleetOptions<I, S, T>,
): WarmPool<I> | undefined {
	const poolSpec = options.pool
	if (poolSpec === undefined || !(poolSpec.size > 0)) return undefined
	return new WarmPool<I>({
		size: poolSpec.size,
		start: (signal) => options.start(poolSpec.spec, signal),
		...(options.onBackgroundError ? { onError: options.onBackgroundError } : {}),
		...(options.onWarmSandboxReady
			? { onReady: (instance: I) => options.onWarmSandboxReady?.(instance.id) }
			: {}),
	})
}

/**
 * One start under its own controller, held in `starting` while it runs: the caller's signal or
 * close() (which aborts every controller in `starting`) aborts it.
 */
async function startUnderOwnController<I, S>(
	start: (spec: S, signal: AbortSignal) => Promise<I>,
	spec: S,
	signal: AbortSignal | undefined,
	starting: Set<AbortController>,
): Promise<I> {
	const controller = new AbortController()
	const forward = () => controller.abort(signal?.reason)
	signal?.addEventListener('abort', forward, { once: true })
	starting.add(controller)
	try {
		return await start(spec, controller.signal)
	} finally {
		signal?.removeEventListener('abort', forward)
		starting.delete(controller)
	}
}

export function createInstanceFleet<
	I extends FleetInstance,
	S,
	T extends { destroy(): Promise<void> },
>(options: InstanceFleetOptions<I, S, T>): InstanceFleet<S, T> {
	const live = new Set<T>()
	const starting = new Set<AbortController>()
	const pending = new Set<Promise<void>>()
	let closing: Promise<void> | undefined
	let reaping: Promise<void> | undefined
	const reapOnce = () => {
		reaping ??= options.reap()
		return reaping
	}
	const poolSpec = options.pool
	const pool = warmPoolOf(options)
	if (pool) void reapOnce()
	pool?.fill()

	const startCold = (spec: S, signal: AbortSignal | undefined) =>
		startUnderOwnController(options.start, spec, signal, starting)

	const createOnce = async (spec: S, signal: AbortSignal | undefined): Promise<T> => {
		if (closing) throw options.closedError()
		signal?.throwIfAborted()
		const warm = pool && poolSpec?.serves(spec) ? pool.take() : undefined
		const instance = warm ?? (await startCold(spec, signal))
		if (closing || signal?.aborted) {
			await instance.release().catch(() => undefined)
			if (signal?.aborted) throw signal.reason
			throw options.closedError()
		}
		let handed: HandedOut<T> | undefined
		handed = options.handOut(instance, spec, () => {
			if (handed) live.delete(handed.sandbox)
		})
		if (handed.owned) live.add(handed.sandbox)
		return handed.sandbox
	}

	const create = (spec: S, signal?: AbortSignal): Promise<T> => {
		const run = createOnce(spec, signal)
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

	const closeAll = async () => {
		for (const controller of starting) controller.abort(options.closedError())
		await pool?.close()
		while (pending.size > 0) await Promise.all([...pending])
		await reaping
		await Promise.allSettled([...live].map((sandbox) => sandbox.destroy()))
	}

	return {
		create,
		close: () => {
			closing ??= closeAll()
			return closing
		},
	}
}

/** What `agentSandboxOf` needs of a started instance. */
export interface AgentBackedInstance {
	readonly id: string
	readonly transport: AgentTransport
	readonly rootDir: string
	/** The egress proxy's decisions, for the sandbox's `events()` (a proxied network only). */
	readonly egressDecisions?: AgentSandboxOptions['egressDecisions']
	release(): Promise<void>
}

/**
 * The one `AgentSandbox` over a started instance: an unconfirmable cancellation retires the whole
 * unit (every process dies with it), and destroy releases it and then `forget`s it.
 */
export function agentSandboxOf(
	instance: AgentBackedInstance,
	options: {
		readonly environment: SandboxEnvironment
		readonly defaultTimeoutMs?: number
		readonly outputBudget: ExecOutputBudget
	},
	forget: () => void,
): AgentSandbox {
	return createAgentSandbox({
		id: instance.id,
		transport: instance.transport,
		rootDir: instance.rootDir,
		environment: options.environment,
		outputBudget: options.outputBudget,
		...(instance.egressDecisions ? { egressDecisions: instance.egressDecisions } : {}),
		...(options.defaultTimeoutMs === undefined
			? {}
			: { defaultTimeoutMs: options.defaultTimeoutMs }),
		retire: async (error) => {
			try {
				await instance.release()
				return { accepted: true, reason: error.message }
			} catch (cause) {
				return { accepted: false, error: cause instanceof Error ? cause : new Error(String(cause)) }
			}
		},
		release: async () => {
			try {
				await instance.release()
			} finally {
				forget()
			}
		},
	})
}

/**
 * The hand-out of a tier whose every sandbox is the provider's own to take down on close(): one
 * `AgentSandbox` over the instance, with the create's timeout as its default.
 */
export function ownedAgentSandboxHandOut<S extends { readonly timeoutMs?: number | undefined }>(
	environment: SandboxEnvironment,
	outputBudget: ExecOutputBudget,
): (instance: AgentBackedInstance, spec: S, forget: () => void) => HandedOut<AgentSandbox> {
	return (instance, spec, forget) => ({
		sandbox: agentSandboxOf(
			instance,
			{
				environment,
				...(spec.timeoutMs === undefined ? {} : { defaultTimeoutMs: spec.timeoutMs }),
				outputBudget,
			},
			forget,
		),
		owned: true,
	})
}
