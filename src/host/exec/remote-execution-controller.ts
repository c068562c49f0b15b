/**
 * Runs a command on a remote peer so that an `AbortSignal` is honoured provably: every run is
 * reserved first (so the peer can say whether it ever started), then executed while racing a
 * cancellation that a caller abort, an observation deadline (timeout + grace) or an execution
 * failure can start. A cancellation is a series of cancel attempts inside a confirm window; if
 * none is acknowledged the outcome is unknown and `RemoteCancellationUnknownError` tells the
 * backend to retire the unit. A caller abort always RESOLVES with the aborted shape
 * (`exec-result-shapes.ts`), never as an unaborted success.
 */

import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import type {
	SandboxExecOptions,
	SandboxExecResult,
	SandboxOutputChunk,
} from '../../contract/sandbox.js'
import { DEFAULT_AGENT_TRANSPORT_OPTIONS } from '../transport/agent-transport-options.js'
import { RemoteProtocolError } from '../transport/transport-errors.js'
import { boundedControlRequest } from './bounded-control-request.js'
import {
	abortedResult,
	completedResult,
	ExecOutputCapture,
	neverStartedResult,
	timedOutResult,
} from './exec-result-shapes.js'
import { ExecutionClock, type RemoteExecutionTiming } from './execution-timing.js'
import {
	RemoteCancellationUnknownError,
	RemoteCommandError,
	RemoteResultIncompleteError,
} from './remote-execution-errors.js'
import type {
	RemoteCancellationAcknowledgement,
	RemoteTerminalMetadata,
} from './remote-execution-messages.js'
import { parseCancellationAck, parseReservation } from './remote-execution-reply.js'

/** How long cancel attempts continue before the outcome is declared unknown. */
export const DEFAULT_CANCEL_CONFIRM_TIMEOUT_MS = 8000
export const DEFAULT_RESULT_DRAIN_TIMEOUT_MS = 1500
export const DEFAULT_EXECUTION_OBSERVATION_GRACE_MS = 500
export const DEFAULT_EXECUTION_TIMEOUT_MS = 5 * 60_000
/** Pause between two cancel attempts. */
const CANCEL_RETRY_PAUSE_MS = 50

export interface RemoteExecuteRequest {
	readonly executionId: string
	readonly command: string
	readonly args: readonly string[]
	readonly cwd?: string
	readonly env?: Readonly<Record<string, string>>
	readonly timeoutMs: number
}

/**
 * What a transport provides to the controller. `onDialed`, when an adapter honours it, is told how
 * long each request's connection took to establish (it feeds `RemoteExecutionTiming.dialMs`).
 */
export interface RemoteExecutionAdapter {
	readonly label: string
	/** Answers the raw reservation reply (refusals included); the controller validates it. */
	reserve(signal: AbortSignal, onDialed?: (durationMs: number) => void): Promise<unknown>
	/** Answers the raw cancellation reply; the controller validates it. */
	cancel(
		executionId: string,
		signal: AbortSignal,
		onDialed?: (durationMs: number) => void,
	): Promise<unknown>
	/**
	 * Runs the reserved execution, forwarding output deltas; resolves with the terminal metadata,
	 * throws `RemoteCommandError` for a guest `error` event and `RemoteProtocolError` for a bad stream.
	 */
	execute(
		request: RemoteExecuteRequest,
		signal: AbortSignal,
		onOutput: (chunk: SandboxOutputChunk) => void,
		onDialed?: (durationMs: number) => void,
	): Promise<RemoteTerminalMetadata>
}

export interface RemoteExecutionControllerOptions {
	readonly controlRequestTimeoutMs?: number
	readonly cancelConfirmTimeoutMs?: number
	readonly resultDrainTimeoutMs?: number
	readonly executionObservationGraceMs?: number
	readonly defaultExecutionTimeoutMs?: number
	/**
	 * Told once per `exec()` call, when it settles (result or error), where its time went
	 * (execution-timing.ts): durations only. Must not throw; a throw is ignored.
	 */
	readonly onTiming?: (timing: RemoteExecutionTiming) => void
}

type CancellationReason = 'caller' | 'observation-timeout' | 'reconcile'

type ExecutionOutcome =
	| { readonly kind: 'result'; readonly metadata: RemoteTerminalMetadata }
	| { readonly kind: 'failed'; readonly error: unknown }

type CancellationOutcome =
	| { readonly kind: 'ack'; readonly ack: RemoteCancellationAcknowledgement }
	| { readonly kind: 'unknown'; readonly error: unknown }

function describeReply(reply: unknown): string {
	if (reply !== null && typeof reply === 'object' && 'error' in reply) {
		return String((reply as { error: unknown }).error).slice(0, 200)
	}
	return 'not an acknowledgement'
}

export class RemoteExecutionController {
	readonly adapter: RemoteExecutionAdapter
	readonly controlRequestTimeoutMs: number
	readonly cancelConfirmTimeoutMs: number
	readonly resultDrainTimeoutMs: number
	readonly executionObservationGraceMs: number
	readonly defaultExecutionTimeoutMs: number
	readonly #onTiming: ((timing: RemoteExecutionTiming) => void) | undefined

	constructor(adapter: RemoteExecutionAdapter, options: RemoteExecutionControllerOptions = {}) {
		this.adapter = adapter
		this.controlRequestTimeoutMs =
			options.controlRequestTimeoutMs ?? DEFAULT_AGENT_TRANSPORT_OPTIONS.controlRequestTimeoutMs
		this.cancelConfirmTimeoutMs =
			options.cancelConfirmTimeoutMs ?? DEFAULT_CANCEL_CONFIRM_TIMEOUT_MS
		this.resultDrainTimeoutMs = options.resultDrainTimeoutMs ?? DEFAULT_RESULT_DRAIN_TIMEOUT_MS
		this.executionObservationGraceMs =
			options.executionObservationGraceMs ?? DEFAULT_EXECUTION_OBSERVATION_GRACE_MS
		this.defaultExecutionTimeoutMs =
			options.defaultExecutionTimeoutMs ?? DEFAULT_EXECUTION_TIMEOUT_MS
		this.#onTiming = options.onTiming
	}

	async exec(
		command: string,
		args: readonly string[] = [],
		options: SandboxExecOptions = {},
	): Promise<SandboxExecResult> {
		const clock = new ExecutionClock()
		try {
			return await this.#exec(command, args, options, clock)
		} finally {
			try {
				this.#onTiming?.(clock.finish())
			} catch {
				// `onTiming` must not throw; a throwing callback never changes the outcome.
			}
		}
	}

	async #exec(
		command: string,
		args: readonly string[],
		options: SandboxExecOptions,
		clock: ExecutionClock,
	): Promise<SandboxExecResult> {
		const started = performance.now()
		const elapsed = () => performance.now() - started
		const caller = options.signal
		if (caller?.aborted) return neverStartedResult(0)

		// 1. Reserve first, always: only a reservation lets the peer prove a run never started.
		let executionId: string
		clock.reserveStarted()
		try {
			const reply = await boundedControlRequest(
				'reserve-execution',
				this.controlRequestTimeoutMs,
				caller,
				(s) => this.adapter.reserve(s, clock.onDialed),
			)
			clock.reserveEnded()
			executionId = parseReservation(reply).executionId
		} catch (error) {
			clock.reserveEnded()
			if (caller?.aborted) return neverStartedResult(elapsed())
			throw error
		}

		// 2. Aborted between reservation and execution: the reservation is cancelled, not run.
		if (caller?.aborted) {
			const ack = await this.confirmCancellation(executionId, clock.onDialed)
			if (ack.started) {
				throw new RemoteResultIncompleteError(
					`${this.adapter.label}: ${executionId} reports started although it was never executed`,
					ack,
				)
			}
			return neverStartedResult(elapsed())
		}

		// 3. Execute on a private transport signal, racing a cancellation.
		const output = new ExecOutputCapture(options.onOutput)
		const timeoutMs = options.timeout ?? this.defaultExecutionTimeoutMs
		const transport = new AbortController()
		clock.executeStarted()
		const execution: Promise<ExecutionOutcome> = this.adapter
			.execute(
				{
					executionId,
					command,
					args,
					...(options.cwd === undefined ? {} : { cwd: options.cwd }),
					...(options.env === undefined ? {} : { env: options.env }),
					timeoutMs,
				},
				transport.signal,
				output.push,
				clock.onDialed,
			)
			.then(
				(metadata) => {
					clock.executeEnded()
					return { kind: 'result', metadata }
				},
				(error: unknown) => {
					clock.executeEnded()
					return { kind: 'failed', error }
				},
			)

		let reason: CancellationReason | undefined
		let cancellation: Promise<CancellationOutcome> | undefined
		let announceCancellation: (outcome: Promise<CancellationOutcome>) => void = () => {}
		// Settles with the cancellation's outcome once one has been started (by whatever reason).
		const cancellationSettled = new Promise<CancellationOutcome>((resolve) => {
			announceCancellation = resolve
		})
		const startCancellation = (why: CancellationReason): Promise<CancellationOutcome> => {
			if (!cancellation) {
				reason = why
				cancellation = this.confirmCancellation(executionId, clock.onDialed).then(
					(ack) => ({ kind: 'ack', ack }),
					(error: unknown) => ({ kind: 'unknown', error }),
				)
				announceCancellation(cancellation)
			}
			return cancellation
		}
		const onAbort = () => {
			startCancellation('caller')
		}
		caller?.addEventListener('abort', onAbort, { once: true })
		if (caller?.aborted) onAbort()
		const timer = setTimeout(
			() => startCancellation('observation-timeout'),
			timeoutMs + this.executionObservationGraceMs,
		)

		try {
			const first = await Promise.race([
				execution.then((outcome) => ({ from: 'execution' as const, outcome })),
				cancellationSettled.then((outcome) => ({ from: 'cancellation' as const, outcome })),
			])

			if (first.from === 'execution') {
				const outcome = first.outcome
				if (outcome.kind === 'result') {
					if (caller?.aborted) return abortedResult(outcome.metadata, output, elapsed())
					return completedResult(outcome.metadata, output)
				}
				// 6. The execution failed first: reconcile through a cancellation.
				const reconciled = await startCancellation('reconcile')
				if (reconciled.kind === 'unknown') throw reconciled.error
				const ack = reconciled.ack
				if (outcome.error instanceof RemoteCommandError && ack.state === 'failed') {
					throw outcome.error
				}
				if (caller?.aborted) {
					return ack.started
						? abortedResult(ack.result, output, elapsed())
						: neverStartedResult(elapsed())
				}
				if (!ack.started) throw outcome.error
				throw new RemoteResultIncompleteError(
					`${this.adapter.label}: ${executionId} failed after it started and its result was lost`,
					ack,
					{ cause: outcome.error },
				)
			}

			// 5. The cancellation settled first.
			const cancelled = first.outcome
			if (cancelled.kind === 'unknown') throw cancelled.error
			const ack = cancelled.ack
			if (!ack.started) {
				if (caller?.aborted) return neverStartedResult(elapsed())
				return timedOutResult(ack.result, output, elapsed())
			}
			const drained = await this.#drain(execution)
			if (drained?.kind === 'result') {
				if (caller?.aborted) return abortedResult(drained.metadata, output, elapsed())
				if (reason === 'observation-timeout') {
					return timedOutResult(drained.metadata, output, elapsed())
				}
				return completedResult(drained.metadata, output)
			}
			if (caller?.aborted) return abortedResult(ack.result, output, elapsed())
			if (drained?.error instanceof RemoteCommandError && ack.state === 'failed') {
				throw drained.error
			}
			if (reason === 'observation-timeout' && ack.state === 'cancelled') {
				return timedOutResult(ack.result, output, elapsed())
			}
			throw new RemoteResultIncompleteError(
				`${this.adapter.label}: cancellation of ${executionId} was confirmed but its result did not arrive within ${this.resultDrainTimeoutMs} ms`,
				ack,
				drained ? { cause: drained.error } : {},
			)
		} finally {
			clearTimeout(timer)
			caller?.removeEventListener('abort', onAbort)
			transport.abort()
		}
	}

	/** Waits at most `resultDrainTimeoutMs` for the execution to settle. */
	async #drain(execution: Promise<ExecutionOutcome>): Promise<ExecutionOutcome | undefined> {
		let timer: NodeJS.Timeout | undefined
		const expired = new Promise<undefined>((resolve) => {
			timer = setTimeout(() => resolve(undefined), this.resultDrainTimeoutMs)
		})
		try {
			return await Promise.race([execution, expired])
		} finally {
			clearTimeout(timer)
		}
	}

	/**
	 * Cancel attempts (each bounded by the control timeout and what remains of the window, 50 ms
	 * apart) until one answers a valid acknowledgement; none within the window ⇒ unknown.
	 */
	async confirmCancellation(
		executionId: string,
		onDialed?: (durationMs: number) => void,
	): Promise<RemoteCancellationAcknowledgement> {
		const deadline = performance.now() + this.cancelConfirmTimeoutMs
		let lastError: unknown
		for (;;) {
			const remaining = deadline - performance.now()
			if (remaining <= 0) {
				throw new RemoteCancellationUnknownError(
					executionId,
					`no cancellation was acknowledged within ${this.cancelConfirmTimeoutMs} ms`,
					lastError === undefined ? {} : { cause: lastError },
				)
			}
			const bound = Math.max(1, Math.min(this.controlRequestTimeoutMs, remaining))
			try {
				const reply = await boundedControlRequest('cancel-execution', bound, undefined, (s) =>
					this.adapter.cancel(executionId, s, onDialed),
				)
				const ack = parseCancellationAck(reply)
				if (ack) return ack
				lastError = new RemoteProtocolError(`cancel-execution: ${describeReply(reply)}`)
			} catch (error) {
				lastError = error
			}
			await sleep(Math.min(CANCEL_RETRY_PAUSE_MS, Math.max(0, deadline - performance.now())))
		}
	}
}
