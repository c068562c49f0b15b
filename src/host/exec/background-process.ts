/**
 * `Sandbox.spawn` / `attachProcess` over the detachable-execution engine (`detachable-execution.ts`):
 * a background command is an `exec` with `detach: true` that the handle watches — the guest keeps
 * its output, so the watch can end (`detach()`, a lost connection, this process exiting) without
 * touching the command, and another process reattaches by id (`attach-execution`). `kill()` is the
 * engine's confirmed cancel; `output()` replays what this handle received, then follows live.
 */
import {
	callSite,
	requireContent,
	requireOneOf,
	signalOfOptions,
} from '../../contract/argument-validators.js'
import type {
	SandboxExecResult,
	SandboxOutputChunk,
	SandboxProcess,
	SandboxProcessKillOptions,
	SandboxProcessSignal,
} from '../../contract/sandbox.js'
import { EXECUTION_SIGNALS } from '../../wire/execution-input.js'
import { RemoteProtocolError } from '../refusals/refusal-errors.js'
import type { AttachExecutionOptions, DetachableExecOptions } from './detachable-exec-options.js'

/** `spawn`'s default budget: the guest's default ceiling (`NAMZU_SANDBOX_MAX_TIMEOUT_MS`). */
export const DEFAULT_SPAWN_TIMEOUT_MS = 30 * 60_000
/** Output an `output()` iterator can still replay; older chunks are dropped first. */
export const SPAWN_OUTPUT_REPLAY_BYTES = 8 * 1024 * 1024

/** The verbs of the sandbox a handle is built over. */
export interface BackgroundVerbs {
	exec(
		command: string,
		args: readonly string[],
		options: DetachableExecOptions,
	): Promise<SandboxExecResult>
	attachExecution(executionId: string, options: AttachExecutionOptions): Promise<SandboxExecResult>
	cancelExecution(executionId: string, options: { signal?: AbortSignal }): Promise<unknown>
	/** Bytes for the command's stdin, then its end when `end` (process-input.ts). */
	processInput(
		executionId: string,
		input: { readonly bytes: Uint8Array; readonly end: boolean; readonly operation: string },
		signal: AbortSignal | undefined,
	): Promise<void>
	/** One signal to the command's process group; false when it had already ended. */
	signalProcess(
		executionId: string,
		name: SandboxProcessSignal,
		signal: AbortSignal | undefined,
	): Promise<boolean>
}

/** The options object's signal, checked (`SandboxArgumentError` naming `method`'s parameter). */
function optionsSignal(method: string, options: unknown): AbortSignal | undefined {
	return signalOfOptions(callSite(method), options)
}

/** The chunks a handle received, bounded, each iterator with its own cursor. */
class OutputReplay {
	readonly #chunks: SandboxOutputChunk[] = []
	/** Index (over every chunk ever pushed) of `#chunks[0]`. */
	#base = 0
	#bytes = 0
	#ended = false
	#wake: Array<() => void> = []

	push(chunk: SandboxOutputChunk): void {
		this.#chunks.push(chunk)
		this.#bytes += chunk.data.length
		while (this.#bytes > SPAWN_OUTPUT_REPLAY_BYTES && this.#chunks.length > 1) {
			this.#bytes -= this.#chunks.shift()?.data.length ?? 0
			this.#base += 1
		}
		this.#notify()
	}

	end(): void {
		this.#ended = true
		this.#notify()
	}

	#notify(): void {
		for (const wake of this.#wake.splice(0)) wake()
	}

	async *iterate(): AsyncGenerator<SandboxOutputChunk> {
		let next = this.#base
		for (;;) {
			next = Math.max(next, this.#base)
			const chunk = this.#chunks[next - this.#base]
			if (chunk !== undefined) {
				next += 1
				yield chunk
				continue
			}
			if (this.#ended) return
			await new Promise<void>((resolve) => this.#wake.push(resolve))
		}
	}
}

class BackgroundProcess implements SandboxProcess {
	readonly id: string
	readonly #result: Promise<SandboxExecResult>
	readonly #replay: OutputReplay
	readonly #watch: AbortController
	readonly #verbs: BackgroundVerbs

	constructor(
		id: string,
		result: Promise<SandboxExecResult>,
		replay: OutputReplay,
		watch: AbortController,
		verbs: BackgroundVerbs,
	) {
		this.id = id
		this.#result = result
		this.#replay = replay
		this.#watch = watch
		this.#verbs = verbs
		// Nobody may ever call wait(): its rejection is not an unhandled one.
		result.catch(() => undefined)
	}

	wait(): Promise<SandboxExecResult> {
		return this.#result
	}

	kill(options?: SandboxProcessKillOptions): Promise<void>
	kill(signal: SandboxProcessSignal, options?: SandboxProcessKillOptions): Promise<void>
	async kill(
		first?: SandboxProcessSignal | SandboxProcessKillOptions,
		second?: SandboxProcessKillOptions,
	): Promise<void> {
		if (typeof first !== 'string') {
			const signal = optionsSignal('kill', first)
			await this.#verbs.cancelExecution(this.id, signal === undefined ? {} : { signal })
			return
		}
		const name = requireOneOf(callSite('kill'), 'signal', first, EXECUTION_SIGNALS)
		await this.#verbs.signalProcess(this.id, name, optionsSignal('kill', second))
	}

	async write(data: string | Uint8Array, options?: SandboxProcessKillOptions): Promise<void> {
		const site = callSite('write')
		requireContent(site, 'data', data)
		const signal = optionsSignal('write', options)
		const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data
		await this.#verbs.processInput(this.id, { bytes, end: false, operation: 'write' }, signal)
	}

	async closeStdin(options?: SandboxProcessKillOptions): Promise<void> {
		const signal = optionsSignal('closeStdin', options)
		const input = { bytes: new Uint8Array(0), end: true, operation: 'closeStdin' }
		await this.#verbs.processInput(this.id, input, signal)
	}

	output(): AsyncIterable<SandboxOutputChunk> {
		return this.#replay.iterate()
	}

	detach(): void {
		this.#watch.abort()
	}
}

export interface SpawnRequest {
	readonly command: string
	readonly args: readonly string[]
	/** Everything `exec` takes but the watch's own fields (set here) and `signal`. */
	readonly options: Omit<DetachableExecOptions, 'signal'>
	/** Aborts the start only: once the guest took the id, the command is the handle's. */
	readonly startSignal?: AbortSignal
}

/** Starts the command detached; resolves once the guest accepted its id (before it runs). */
export function spawnBackground(
	verbs: BackgroundVerbs,
	request: SpawnRequest,
): Promise<SandboxProcess> {
	const replay = new OutputReplay()
	const watch = new AbortController()
	const start = new AbortController()
	const { startSignal } = request
	const forward = () => start.abort(startSignal?.reason)
	if (startSignal?.aborted) forward()
	else startSignal?.addEventListener('abort', forward, { once: true })
	return new Promise<SandboxProcess>((resolve, reject) => {
		let handle: SandboxProcess | undefined
		const result = verbs
			.exec(request.command, request.args, {
				timeout: DEFAULT_SPAWN_TIMEOUT_MS,
				...request.options,
				signal: start.signal,
				detach: true,
				detachSignal: watch.signal,
				onOutput: (chunk) => replay.push(chunk),
				onExecutionId: (id) => {
					startSignal?.removeEventListener('abort', forward)
					handle = new BackgroundProcess(id, result, replay, watch, verbs)
					resolve(handle)
				},
			})
			.finally(() => replay.end())
		// Settled before an id was told: the start itself failed (or was aborted).
		result.then(
			(ended) => {
				if (handle) return
				const text = `spawn: the run ended (exit code ${ended.exitCode}) before the guest named it`
				reject(new RemoteProtocolError(text))
			},
			(error: unknown) => {
				if (!handle) reject(error)
			},
		)
	})
}

/** A handle on a background command by id: replays what the guest holds, then follows it. */
export function attachBackground(
	verbs: BackgroundVerbs,
	executionId: string,
	options: Omit<AttachExecutionOptions, 'onOutput' | 'fromOffset'>,
): SandboxProcess {
	const replay = new OutputReplay()
	const watch = new AbortController()
	const { signal } = options
	const watching = signal === undefined ? watch.signal : AbortSignal.any([watch.signal, signal])
	const result = verbs
		.attachExecution(executionId, {
			...options,
			signal: watching,
			onOutput: (chunk) => replay.push(chunk),
		})
		.finally(() => replay.end())
	return new BackgroundProcess(executionId, result, replay, watch, verbs)
}
