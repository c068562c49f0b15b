/**
 * Runs a command on a remote peer so that an `AbortSignal` is honoured provably, in four steps:
 * reserve (`reserve-execution.ts`: so the peer can later say whether it ever started) — or, with a
 * peer that reserves on execute, mint the id and let the `execute` carry it, every cancel then
 * fencing it, so a cancel that overtakes the `execute` still proves the run never started; cancel
 * the reservation instead when the caller aborted meanwhile; execute while racing a cancellation that a
 * caller abort, the observation deadline (timeout + grace) or a failed stream can start
 * (`cancellation-race.ts`, confirmed by `cancel-confirm.ts`); decide what was observed
 * (`execution-outcome.ts`) and shape it (`exec-result-shapes.ts`). No acknowledged cancellation
 * inside the window ⇒ `RemoteCancellationUnknownError`, which tells the backend to retire the unit.
 * A caller abort always RESOLVES with the aborted shape, never as an unaborted success.
 */

import { performance } from 'node:perf_hooks'
import { MAX_TIMER_MS } from '../../contract/argument-validators.js'
import type { SandboxExecResult, SandboxOutputChunk } from '../../contract/sandbox.js'
import { mintExecutionId } from '../../wire/execution-id.js'
import { DEFAULT_EXECUTION_TIMEOUT_MS } from '../../wire/protocol.js'
import { DEFAULT_AGENT_TRANSPORT_OPTIONS } from '../transport/agent-transport-options.js'
import { confirmCancellation } from './cancel-confirm.js'
import { runCancellationRace } from './cancellation-race.js'
import { RemoteResultIncompleteError } from './exec-errors.js'
import {
	type AgentExecOptions,
	executeRequestOf,
	type RemoteExecuteRequest,
	resolveMaxOutputBytes,
} from './exec-options.js'
import type { ExecOutputBudget } from './exec-output-budget.js'
import { ExecOutputCapture, neverStartedResult, resultOfDecision } from './exec-result-shapes.js'
import { decideExecutionOutcome, type ExecutionSettlement } from './execution-outcome.js'
import { ExecutionClock, type RemoteExecutionTiming } from './execution-timing.js'
import type {
	RemoteCancellationAcknowledgement,
	RemoteTerminalMetadata,
} from './remote-execution-messages.js'
import { type ReserveOutcome, reserveExecution } from './reserve-execution.js'

/** How long cancel attempts continue before the outcome is declared unknown. */
export const DEFAULT_CANCEL_CONFIRM_TIMEOUT_MS = 8000
export const DEFAULT_RESULT_DRAIN_TIMEOUT_MS = 1500
export const DEFAULT_EXECUTION_OBSERVATION_GRACE_MS = 500

export type { RemoteExecuteRequest } from './exec-options.js'

/**
 * What a transport provides to the controller. `onDialed`, when an adapter honours it, is told how
 * long each request's connection took to establish (it feeds `RemoteExecutionTiming.dialMs`).
 */
export interface RemoteExecutionAdapter {
	readonly label: string
	/** Answers the raw reservation reply (refusals included); the controller validates it. */
	reserve(signal: AbortSignal, onDialed?: (durationMs: number) => void): Promise<unknown>
	/**
	 * Whether an `execute` may carry its own reservation now (its id minted here, `reserve: true`),
	 * with `fence` on every cancel of it. Absent or false: the `reserve` round trip first.
	 */
	reservesOnExecute?(): boolean
	/**
	 * Answers the raw cancellation reply; the controller validates it. `fence`: the id was sent by
	 * an `execute` that reserves it, so the peer must fence an id it has not seen yet.
	 */
	cancel(
		executionId: string,
		signal: AbortSignal,
		onDialed?: (durationMs: number) => void,
		fence?: boolean,
	): Promise<unknown>
	/**
	 * Runs the reserved execution, forwarding output deltas; resolves with the terminal metadata,
	 * throws `RemoteCommandError` for a guest `error` event and `RemoteProtocolError` for a bad stream.
	 */
	execute(
		request: RemoteExecuteRequest,
		signal: AbortSignal,
		/** A returned promise (an uncollected exec's slow consumer) holds the next event until it settles. */
		onOutput: (chunk: SandboxOutputChunk) => Promise<void> | undefined,
		onDialed?: (durationMs: number) => void,
	): Promise<RemoteTerminalMetadata>
}

/**
 * The execution controller's windows (control requests, the cancel confirmation, the result drain,
 * the observation grace, the default execution timeout) and its timing hook.
 */
export interface RemoteExecutionControllerOptions {
	readonly controlRequestTimeoutMs?: number
	readonly cancelConfirmTimeoutMs?: number
	readonly resultDrainTimeoutMs?: number
	readonly executionObservationGraceMs?: number
	/** An exec's `timeout` when its caller names none; default `DEFAULT_EXECUTION_TIMEOUT_MS`. */
	readonly defaultTimeoutMs?: number
	/**
	 * Told once per `exec()` call, when it settles (result or error), where its time went
	 * (execution-timing.ts): durations only. Must not throw; a throw is ignored.
	 */
	readonly onTiming?: (timing: RemoteExecutionTiming) => void
	/** The provider's budget of retained exec output (`exec-output-budget.ts`); none: unbudgeted. */
	readonly outputBudget?: ExecOutputBudget
}

/**
 * One command on a remote peer with an `AbortSignal` honoured provably: the four steps above over
 * any `RemoteExecutionAdapter` (the guest agent's transport is one). `AgentSandbox.exec` runs
 * through it; a tier of your own over another transport gives it an adapter.
 */
export class RemoteExecutionController {
	readonly adapter: RemoteExecutionAdapter
	readonly controlRequestTimeoutMs: number
	readonly cancelConfirmTimeoutMs: number
	readonly resultDrainTimeoutMs: number
	readonly executionObservationGraceMs: number
	readonly defaultTimeoutMs: number
	readonly #onTiming: ((timing: RemoteExecutionTiming) => void) | undefined
	readonly outputBudget: ExecOutputBudget | undefined

	constructor(adapter: RemoteExecutionAdapter, options: RemoteExecutionControllerOptions = {}) {
		this.adapter = adapter
		this.controlRequestTimeoutMs =
			options.controlRequestTimeoutMs ?? DEFAULT_AGENT_TRANSPORT_OPTIONS.controlRequestTimeoutMs
		this.cancelConfirmTimeoutMs =
			options.cancelConfirmTimeoutMs ?? DEFAULT_CANCEL_CONFIRM_TIMEOUT_MS
		this.resultDrainTimeoutMs = options.resultDrainTimeoutMs ?? DEFAULT_RESULT_DRAIN_TIMEOUT_MS
		this.executionObservationGraceMs =
			options.executionObservationGraceMs ?? DEFAULT_EXECUTION_OBSERVATION_GRACE_MS
		this.defaultTimeoutMs = options.defaultTimeoutMs ?? DEFAULT_EXECUTION_TIMEOUT_MS
		this.#onTiming = options.onTiming
		this.outputBudget = options.outputBudget
	}

	/**
	 * Runs `command` with `args` to its end, the caller's abort or its timeout; an abort resolves
	 * with the aborted shape once the peer confirmed the cancel, `RemoteCancellationUnknownError`
	 * when it never did.
	 */
	async exec(
		command: string,
		args: readonly string[] = [],
		options: AgentExecOptions = {},
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
		options: AgentExecOptions,
		clock: ExecutionClock,
	): Promise<SandboxExecResult> {
		const started = performance.now()
		const elapsed = () => performance.now() - started
		const caller = options.signal
		const maxOutputBytes = resolveMaxOutputBytes(options.maxOutputBytes)
		if (caller?.aborted) return neverStartedResult(0)

		// One round trip: nothing was sent yet, so an abort until the execute leaves means nothing ran.
		const fence = this.adapter.reservesOnExecute?.() === true
		let executionId: string
		if (fence) {
			executionId = mintExecutionId()
		} else {
			const reserved = await this.#reserve(caller, clock)
			if (reserved.kind === 'aborted') return neverStartedResult(elapsed())
			executionId = reserved.reservation.executionId
			if (caller?.aborted) return this.#cancelUnexecuted(executionId, clock, elapsed)
		}

		const output = new ExecOutputCapture(
			options.onOutput,
			maxOutputBytes,
			this.outputBudget,
			options.collectOutput !== false,
		)
		const request = executeRequestOf(
			executionId,
			command,
			args,
			options,
			this.defaultTimeoutMs,
			fence,
		)
		const { timeoutMs } = request
		const stream = new AbortController()
		try {
			const facts = await runCancellationRace({
				execution: this.#execute(request, stream.signal, output, clock),
				confirm: () => this.#confirm(executionId, clock, fence),
				caller,
				// A timer past the platform's ceiling would fire at once: clamp a near-unbounded run.
				observationDeadlineMs: Math.min(timeoutMs + this.executionObservationGraceMs, MAX_TIMER_MS),
				reconcileFailure: true,
				resultDrainTimeoutMs: this.resultDrainTimeoutMs,
			})
			return resultOfDecision(decideExecutionOutcome(facts), output, {
				label: this.adapter.label,
				executionId,
				elapsedMs: elapsed(),
				resultDrainTimeoutMs: this.resultDrainTimeoutMs,
			})
		} finally {
			stream.abort()
			output.release()
		}
	}

	/** Step 1, always: only a reservation lets the peer prove a run never started. */
	#reserve(caller: AbortSignal | undefined, clock: ExecutionClock): Promise<ReserveOutcome> {
		clock.reserveStarted()
		return reserveExecution({
			request: (signal) => this.adapter.reserve(signal, clock.onDialed),
			controlRequestTimeoutMs: this.controlRequestTimeoutMs,
			caller,
			onSettled: () => clock.reserveEnded(),
		})
	}

	/** Aborted between reservation and execution: the reservation is cancelled, never run. */
	async #cancelUnexecuted(
		executionId: string,
		clock: ExecutionClock,
		elapsed: () => number,
	): Promise<SandboxExecResult> {
		const ack = await this.#confirm(executionId, clock)
		if (ack.started) {
			throw new RemoteResultIncompleteError(
				`${this.adapter.label}: ${executionId} reports started although it was never executed`,
				ack,
			)
		}
		return neverStartedResult(elapsed())
	}

	/** The execute stream as a settlement (it never rejects); output goes into `output`. */
	#execute(
		request: RemoteExecuteRequest,
		signal: AbortSignal,
		output: ExecOutputCapture,
		clock: ExecutionClock,
	): Promise<ExecutionSettlement> {
		clock.executeStarted()
		return this.adapter.execute(request, signal, output.push, clock.onDialed).then(
			(metadata): ExecutionSettlement => {
				clock.executeEnded()
				return { kind: 'ran', metadata, cancelled: false }
			},
			(error: unknown): ExecutionSettlement => {
				clock.executeEnded()
				return { kind: 'failed', error }
			},
		)
	}

	#confirm(
		executionId: string,
		clock: ExecutionClock,
		fence = false,
	): Promise<RemoteCancellationAcknowledgement> {
		return this.confirmCancellation(executionId, clock.onDialed, fence)
	}

	/**
	 * Cancel attempts until one is acknowledged inside the confirm window (`cancel-confirm.ts`);
	 * none ⇒ `RemoteCancellationUnknownError`. Every refusal is retried.
	 */
	confirmCancellation(
		executionId: string,
		onDialed?: (durationMs: number) => void,
		fence = false,
	): Promise<RemoteCancellationAcknowledgement> {
		return confirmCancellation({
			executionId,
			cancel: (signal) => this.adapter.cancel(executionId, signal, onDialed, fence),
			controlRequestTimeoutMs: this.controlRequestTimeoutMs,
			cancelConfirmTimeoutMs: this.cancelConfirmTimeoutMs,
			refusals: 'retry',
		})
	}
}
