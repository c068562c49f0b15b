/**
 * Detachable executions over a guest agent: a command whose output the guest retains, so losing
 * the connection that watches it costs nothing. The host reserves under the caller's id (or a
 * minted one), executes with `retainOutput`, tracks the offset after the last byte it received,
 * and on a lost connection reattaches with `attach-execution` from that offset — retrying inside
 * `reattachWindowMs`, a bound disarmed by every successful reattach. It never sends a cancel to
 * reconcile a lost connection. `signal` keeps the SDK contract (a confirmed cancel);
 * `detachSignal` only stops watching. Nothing here runs unless the caller named an `executionId`
 * or asked to `detach`; the plain path is `RemoteExecutionController`, and both share one reserve,
 * one cancel-confirm, one race and one outcome decision (`reserve-execution.ts`, `cancel-confirm.ts`,
 * `cancellation-race.ts`, `execution-outcome.ts`).
 */

import { randomUUID } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import type { SandboxExecResult, SandboxOutputChunk } from '../../contract/sandbox.js'
import { EXECUTION_ATTACH_FEATURE } from '../../wire/features.js'
import { AGENT_OP, type ExecuteRequest } from '../../wire/protocol.js'
import { AGENT_REFUSAL, type WireRefusal } from '../../wire/refusals.js'
import {
	AgentOpRefusedError,
	ExecutionCancelRefusedError,
	RemoteCancellationUnknownError,
	RemoteCommandError,
	RemoteProtocolError,
} from '../refusals/refusal-errors.js'
import { refusalToError } from '../refusals/refusal-to-error.js'
import type { AgentTransport } from '../transport/agent-transport.js'
import { requireGuestFeature } from '../transport/guest-features.js'
import { GuestDiedError } from '../transport/transport-errors.js'
import { confirmCancellation } from './cancel-confirm.js'
import { runCancellationRace } from './cancellation-race.js'
import {
	type AttachExecutionOptions,
	DEFAULT_REATTACH_WINDOW_MS,
	type DetachableExecOptions,
} from './detachable-exec-options.js'
import { ExecutionDetachedError } from './exec-errors.js'
import { executeRequestOf, resolveMaxOutputBytes } from './exec-options.js'
import type { ExecOutputBudget } from './exec-output-budget.js'
import {
	type DecisionContext,
	ExecOutputCapture,
	neverStartedResult,
	resultOfDecision,
} from './exec-result-shapes.js'
import { decideExecutionOutcome, type ExecutionSettlement } from './execution-outcome.js'
import type { RemoteCancellationAcknowledgement } from './remote-execution-messages.js'
import { reserveExecution } from './reserve-execution.js'
import {
	parseRetainedExecutionEvent,
	type RetainedExecutionEvent,
} from './retained-execution-events.js'

/** What the runner needs from the sandbox: the transport and the controller's windows. */
export interface DetachableExecutionHost {
	readonly transport: AgentTransport
	readonly controlRequestTimeoutMs: number
	readonly cancelConfirmTimeoutMs: number
	readonly resultDrainTimeoutMs: number
	readonly defaultTimeoutMs: number
	/** The provider's budget of retained exec output this sandbox draws on. */
	readonly outputBudget?: ExecOutputBudget
}

/** The runner's host for a sandbox: its transport and its plain controller's windows. */
export function detachableHostOf(
	transport: AgentTransport,
	controller: Omit<DetachableExecutionHost, 'transport'>,
): DetachableExecutionHost {
	return {
		transport,
		controlRequestTimeoutMs: controller.controlRequestTimeoutMs,
		cancelConfirmTimeoutMs: controller.cancelConfirmTimeoutMs,
		resultDrainTimeoutMs: controller.resultDrainTimeoutMs,
		defaultTimeoutMs: controller.defaultTimeoutMs,
		...(controller.outputBudget ? { outputBudget: controller.outputBudget } : {}),
	}
}

/** Pause between two reattach attempts. */
const REATTACH_PAUSE_MS = 50

type FinalEvent = Extract<RetainedExecutionEvent, { kind: 'result' | 'attach-result' }>

/** What one watcher has received: the output so far, the resume offset, and any gap. */
class ExecutionWatch {
	readonly executionId: string
	readonly output: ExecOutputCapture
	offset: number
	lostBytes = 0
	readonly #onGap: ((lostBytes: number) => void) | undefined

	constructor(
		executionId: string,
		fromOffset: number,
		maxOutputBytes: number,
		budget: ExecOutputBudget | undefined,
		onOutput?: (chunk: SandboxOutputChunk) => void,
		onGap?: (lostBytes: number) => void,
	) {
		this.executionId = executionId
		this.offset = fromOffset
		this.output = new ExecOutputCapture(onOutput, maxOutputBytes, budget)
		this.#onGap = onGap
	}

	attached(fromOffset: number, droppedBytes: number): void {
		this.offset = Math.max(this.offset, fromOffset)
		if (droppedBytes <= 0) return
		this.lostBytes += droppedBytes
		try {
			this.#onGap?.(droppedBytes)
		} catch {
			// `onGap` must not throw; a throwing callback never breaks the watch.
		}
	}

	delta(event: Extract<RetainedExecutionEvent, { kind: 'delta' }>): void {
		// A delta wholly before the resume offset was already delivered.
		if (event.nextOffset <= this.offset) return
		this.offset = event.nextOffset
		this.output.push({ stream: event.stream, data: event.data })
	}

	/** Evicted bytes make both streams incomplete: the retained log is one interleaved space. */
	withGap(result: SandboxExecResult): SandboxExecResult {
		if (this.lostBytes === 0) return result
		const { stdout = 'output-evicted', stderr = 'output-evicted' } = result.outputTruncation ?? {}
		return {
			...result,
			stdoutTruncated: true,
			stderrTruncated: true,
			outputTruncation: { stdout, stderr },
		}
	}
}

interface FollowPlan {
	/** Present for an `exec`: a reservation found still `reserved` is executed (again). */
	readonly execute?: ExecuteRequest
	readonly startWith: 'execute' | 'attach'
	readonly reattachWindowMs: number
	/** Ends the watching (detach); the command is never signalled. */
	readonly stop: AbortSignal
}

type Attempt =
	| { readonly kind: 'final'; readonly event: FinalEvent }
	| { readonly kind: 'refused'; readonly refusal: WireRefusal }
	| { readonly kind: 'lost'; readonly error: unknown }

class ProtocolBreach {
	constructor(readonly error: RemoteProtocolError) {}
}

async function attemptOnce(
	host: DetachableExecutionHost,
	watch: ExecutionWatch,
	op: typeof AGENT_OP.execute | typeof AGENT_OP.attachExecution,
	request: ExecuteRequest | undefined,
	signal: AbortSignal,
	onReattached: () => void,
): Promise<Attempt> {
	let final: FinalEvent | undefined
	let refused: Extract<RetainedExecutionEvent, { kind: 'refused' }> | undefined
	try {
		const events =
			op === AGENT_OP.execute && request
				? host.transport.execute(request, signal)
				: host.transport.attachExecution(
						{ executionId: watch.executionId, fromOffset: watch.offset },
						signal,
					)
		for await (const raw of events) {
			host.transport.noteGuestBootId(raw)
			let event: RetainedExecutionEvent
			try {
				event = parseRetainedExecutionEvent(op, raw)
			} catch (error) {
				throw new ProtocolBreach(
					error instanceof RemoteProtocolError ? error : new RemoteProtocolError(String(error)),
				)
			}
			if (final || refused)
				throw new ProtocolBreach(new RemoteProtocolError(`${op}: event after the end`))
			switch (event.kind) {
				case 'attached':
					onReattached()
					watch.attached(event.fromOffset, event.droppedBytes)
					break
				case 'delta':
					onReattached()
					watch.delta(event)
					break
				case 'refused':
					refused = event
					break
				default:
					final = event
			}
		}
	} catch (error) {
		if (error instanceof ProtocolBreach) throw error.error
		// A refusal in request shape (unknown op, unauthorized) will not heal by retrying, nor will a
		// guest that died.
		if (error instanceof AgentOpRefusedError || error instanceof GuestDiedError) throw error
		if (final) return { kind: 'final', event: final }
		return { kind: 'lost', error }
	}
	if (final) return { kind: 'final', event: final }
	if (refused) return { kind: 'refused', refusal: refused.refusal }
	throw new RemoteProtocolError(`${op}: stream ended without a result`)
}

/** Watches an execution to its end through any number of lost connections. */
async function follow(
	host: DetachableExecutionHost,
	watch: ExecutionWatch,
	plan: FollowPlan,
): Promise<FinalEvent> {
	let mode = plan.startWith
	let lostAt: number | undefined
	let lastLoss: unknown
	for (;;) {
		if (plan.stop.aborted) {
			throw new ExecutionDetachedError(watch.executionId, watch.offset, 'detached')
		}
		const window = new AbortController()
		let timer: NodeJS.Timeout | undefined
		if (lostAt !== undefined) {
			const left = lostAt + plan.reattachWindowMs - performance.now()
			if (left <= 0) {
				throw new ExecutionDetachedError(
					watch.executionId,
					watch.offset,
					'reattach-window-elapsed',
					lastLoss === undefined ? {} : { cause: lastLoss },
				)
			}
			timer = setTimeout(() => window.abort(), left)
		}
		const disarm = () => {
			clearTimeout(timer)
			lostAt = undefined
		}
		const signal = AbortSignal.any([plan.stop, window.signal])
		const op = mode === 'execute' ? AGENT_OP.execute : AGENT_OP.attachExecution
		let attempt: Attempt
		try {
			attempt = await attemptOnce(host, watch, op, plan.execute, signal, disarm)
		} finally {
			clearTimeout(timer)
		}
		if (attempt.kind === 'final') return attempt.event
		if (attempt.kind === 'refused') {
			const { refusal } = attempt
			if (mode === 'execute' && refusal.known === AGENT_REFUSAL.execution_not_reserved) {
				// Someone (an earlier attempt of ours, or another host) already started this id.
				mode = 'attach'
				continue
			}
			if (mode === 'attach' && refusal.executionState === 'reserved' && plan.execute) {
				// The execute never reached the guest: nothing runs yet, so starting it is safe.
				mode = 'execute'
				continue
			}
			if (mode === 'execute') throw refusalToError('execute', refusal, { op: AGENT_OP.execute })
			throw refusalToError('attach', refusal, {
				op: AGENT_OP.attachExecution,
				executionId: watch.executionId,
			})
		}
		lastLoss = attempt.error
		lostAt ??= performance.now()
		mode = 'attach'
		await sleep(REATTACH_PAUSE_MS, undefined, { signal: plan.stop }).catch(() => undefined)
	}
}

/** How a finished execution settled, whoever watched it. */
function settlementOf(event: FinalEvent): ExecutionSettlement {
	if (event.kind === 'result') {
		return { kind: 'ran', metadata: event.metadata, cancelled: event.cancelled }
	}
	if (event.outcome === 'failed') {
		return { kind: 'failed', error: new RemoteCommandError(event.error ?? 'execution failed') }
	}
	if (event.outcome === 'cancelled' && !event.started) return { kind: 'never-started' }
	if (!event.metadata) {
		return {
			kind: 'failed',
			error: new RemoteProtocolError('attach-execution: a finished execution without its result'),
		}
	}
	return {
		kind: 'ran',
		metadata: event.metadata,
		cancelled: event.outcome === 'cancelled' || event.cancelled,
	}
}

/** The watch, to its end, as a settlement (it never rejects). */
function followToSettlement(
	host: DetachableExecutionHost,
	watch: ExecutionWatch,
	plan: FollowPlan,
): Promise<ExecutionSettlement> {
	return follow(host, watch, plan).then(settlementOf, (error: unknown) => ({
		kind: 'failed',
		error,
	}))
}

/**
 * A confirmed cancel by id, from any process: attempts until one is acknowledged inside the
 * confirm window. An id the guest does not hold ⇒ `ExecutionCancelRefusedError`; a guest that
 * could not confirm, or no answer in the window ⇒ `RemoteCancellationUnknownError`. Retires nothing.
 */
export function cancelExecutionById(
	host: DetachableExecutionHost,
	executionId: string,
	signal?: AbortSignal,
): Promise<RemoteCancellationAcknowledgement> {
	return confirmCancellation({
		executionId,
		cancel: (s) => host.transport.cancelExecution(executionId, s),
		controlRequestTimeoutMs: host.controlRequestTimeoutMs,
		cancelConfirmTimeoutMs: host.cancelConfirmTimeoutMs,
		refusals: 'by-id',
		...(signal ? { signal } : {}),
	})
}

/**
 * The cancellation a caller abort starts for a watched run: by id; an id the guest no longer holds
 * means nobody can say whether the command ran, so the outcome is unknown.
 */
async function cancelWatched(
	host: DetachableExecutionHost,
	executionId: string,
): Promise<RemoteCancellationAcknowledgement> {
	try {
		return await cancelExecutionById(host, executionId)
	} catch (error) {
		if (error instanceof ExecutionCancelRefusedError) {
			throw new RemoteCancellationUnknownError(executionId, error.message, { cause: error })
		}
		throw error
	}
}

function notify(callback: ((executionId: string) => void) | undefined, executionId: string): void {
	try {
		callback?.(executionId)
	} catch {
		// `onExecutionId` must not throw; a throwing callback never breaks the exec.
	}
}

/**
 * `exec` with `executionId` and/or `detach`. Resolves like the plain path (completed, timed out,
 * aborted, never started); rejects `ExecutionDetachedError` when it stopped watching a command that
 * may still run (the error names the id and the offset to resume from).
 */
export async function execDetachable(
	host: DetachableExecutionHost,
	command: string,
	args: readonly string[],
	options: DetachableExecOptions,
): Promise<SandboxExecResult> {
	const started = performance.now()
	const elapsed = () => performance.now() - started
	const caller = options.signal
	const maxOutputBytes = resolveMaxOutputBytes(options.maxOutputBytes)
	await requireGuestFeature(host.transport, EXECUTION_ATTACH_FEATURE, 'exec', caller)
	if (caller?.aborted) return neverStartedResult(0)
	// A caller's id was checked where the call entered (`sandbox/sandbox-arguments.ts`).
	const executionId = options.executionId ?? `exec_${randomUUID()}`

	const reserved = await reserveExecution({
		request: (signal) => host.transport.reserveExecution(signal, executionId),
		controlRequestTimeoutMs: host.controlRequestTimeoutMs,
		caller,
	})
	if (reserved.kind === 'aborted') return neverStartedResult(elapsed())
	if (reserved.reservation.executionId !== executionId) {
		throw new RemoteProtocolError('reserve-execution: the guest answered another executionId')
	}
	// An id the guest already holds is not started again: this call follows that run instead.
	const heldState = reserved.reservation.state
	notify(options.onExecutionId, executionId)

	const watch = new ExecutionWatch(
		executionId,
		0,
		maxOutputBytes,
		host.outputBudget,
		options.onOutput,
		options.onGap,
	)
	const stopWatching = new AbortController()
	const stop = options.detachSignal
		? AbortSignal.any([options.detachSignal, stopWatching.signal])
		: stopWatching.signal
	const request: ExecuteRequest = {
		...executeRequestOf(executionId, command, args, options, host.defaultTimeoutMs),
		retainOutput: true,
	}
	try {
		const facts = await runCancellationRace({
			execution: followToSettlement(host, watch, {
				execute: request,
				startWith: heldState === undefined || heldState === 'reserved' ? 'execute' : 'attach',
				reattachWindowMs: options.reattachWindowMs ?? DEFAULT_REATTACH_WINDOW_MS,
				stop,
			}),
			confirm: () => cancelWatched(host, executionId),
			caller,
			reconcileFailure: false,
			resultDrainTimeoutMs: host.resultDrainTimeoutMs,
		})
		const decision = decideExecutionOutcome(facts)
		return watch.withGap(
			resultOfDecision(decision, watch.output, decisionContext(host, executionId, elapsed())),
		)
	} finally {
		stopWatching.abort()
		watch.output.release()
	}
}

/** Names and time for `resultOfDecision`. */
function decisionContext(
	host: DetachableExecutionHost,
	executionId: string,
	elapsedMs: number,
): DecisionContext {
	return {
		label: `guest agent (${host.transport.handle.kind})`,
		executionId,
		elapsedMs,
		resultDrainTimeoutMs: host.resultDrainTimeoutMs,
	}
}

/**
 * `attachExecution`: follows an execution by id, from any process, to the result its `exec` would
 * have produced. Aborting `signal` only detaches (`ExecutionDetachedError`).
 */
export async function attachToExecution(
	host: DetachableExecutionHost,
	executionId: string,
	options: AttachExecutionOptions = {},
): Promise<SandboxExecResult> {
	await requireGuestFeature(
		host.transport,
		EXECUTION_ATTACH_FEATURE,
		'attachExecution',
		options.signal,
	)
	const fromOffset = options.fromOffset ?? 0
	const maxOutputBytes = resolveMaxOutputBytes(options.maxOutputBytes)
	const started = performance.now()
	const watch = new ExecutionWatch(
		executionId,
		fromOffset,
		maxOutputBytes,
		host.outputBudget,
		options.onOutput,
		options.onGap,
	)
	const stop = options.signal ?? new AbortController().signal
	try {
		const execution = await followToSettlement(host, watch, {
			startWith: 'attach',
			reattachWindowMs: options.reattachWindowMs ?? DEFAULT_REATTACH_WINDOW_MS,
			stop,
		})
		const decision = decideExecutionOutcome({ first: 'execution', execution, callerAborted: false })
		return watch.withGap(
			resultOfDecision(
				decision,
				watch.output,
				decisionContext(host, executionId, performance.now() - started),
			),
		)
	} finally {
		watch.output.release()
	}
}
