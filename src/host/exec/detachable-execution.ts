/**
 * Detachable executions over a guest agent: a command whose output the guest
 * retains, so losing the connection that watches it costs nothing. The host reserves under the
 * caller's id (or a minted one), executes with `retainOutput`, tracks the offset after the last
 * byte it received, and on a lost connection reattaches with `attach-execution` from that offset —
 * retrying inside `reattachWindowMs`, a bound disarmed by every successful reattach. It never sends
 * a cancel to reconcile a lost connection. `signal` keeps the SDK contract (a confirmed cancel);
 * `detachSignal` only stops watching. Nothing here runs unless the caller named an `executionId`
 * or asked to `detach`; the plain `exec` path is `RemoteExecutionController`, unchanged.
 */

import { randomUUID } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { SandboxConfigError } from '../../contract/errors.js'
import type { SandboxExecResult, SandboxOutputChunk } from '../../contract/sandbox.js'
import { EXECUTION_ATTACH_FEATURE } from '../../wire/features.js'
import type { ExecuteRequest } from '../../wire/protocol.js'
import type { AgentTransport } from '../transport/agent-transport.js'
import { AgentOpRefusedError, RemoteProtocolError } from '../transport/transport-errors.js'
import { boundedControlRequest } from './bounded-control-request.js'
import {
	type AttachExecutionOptions,
	DEFAULT_REATTACH_WINDOW_MS,
	type DetachableExecOptions,
} from './detachable-exec-options.js'
import {
	ExecutionAttachUnsupportedError,
	ExecutionCancelRefusedError,
	ExecutionDetachedError,
	ExecutionNotAttachableError,
} from './detachable-execution-errors.js'
import {
	abortedResult,
	completedResult,
	ExecOutputCapture,
	neverStartedResult,
} from './exec-result-shapes.js'
import { RemoteCancellationUnknownError, RemoteCommandError } from './remote-execution-errors.js'
import type {
	RemoteCancellationAcknowledgement,
	RemoteTerminalMetadata,
} from './remote-execution-messages.js'
import {
	EXECUTION_ID_PATTERN,
	parseCancellationAck,
	parseReservation,
} from './remote-execution-reply.js'
import {
	parseExecutionState,
	parseRetainedExecutionEvent,
	type RetainedExecutionEvent,
} from './retained-execution-events.js'

/** What the runner needs from the sandbox: the transport and the controller's windows. */
export interface DetachableExecutionHost {
	readonly transport: AgentTransport
	readonly controlRequestTimeoutMs: number
	readonly cancelConfirmTimeoutMs: number
	readonly resultDrainTimeoutMs: number
	readonly defaultExecutionTimeoutMs: number
}

/** Pause between two reattach attempts, and between two cancel attempts. */
const RETRY_PAUSE_MS = 50

type FinalEvent = Extract<RetainedExecutionEvent, { kind: 'result' | 'attach-result' }>

/** A pause between attempts; an abort ends it early and the loop decides what the abort means. */
function pause(signal: AbortSignal | undefined): Promise<void> {
	return sleep(RETRY_PAUSE_MS, undefined, { signal }).catch(() => undefined)
}

/** Refuses, before anything is admitted, a guest that cannot retain output. */
export async function requireExecutionAttach(
	transport: AgentTransport,
	operation: string,
	signal?: AbortSignal,
): Promise<void> {
	const features = await transport.features(signal)
	if (!features.has(EXECUTION_ATTACH_FEATURE)) throw new ExecutionAttachUnsupportedError(operation)
}

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
		onOutput?: (chunk: SandboxOutputChunk) => void,
		onGap?: (lostBytes: number) => void,
	) {
		this.executionId = executionId
		this.offset = fromOffset
		this.output = new ExecOutputCapture(onOutput)
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
		return { ...result, stdoutTruncated: true, stderrTruncated: true }
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
	| { readonly kind: 'refused'; readonly error: string; readonly executionState?: string }
	| { readonly kind: 'lost'; readonly error: unknown }

class ProtocolBreach {
	constructor(readonly error: RemoteProtocolError) {}
}

async function attemptOnce(
	host: DetachableExecutionHost,
	watch: ExecutionWatch,
	op: 'execute' | 'attach-execution',
	request: ExecuteRequest | undefined,
	signal: AbortSignal,
	onReattached: () => void,
): Promise<Attempt> {
	let final: FinalEvent | undefined
	let refused: Extract<RetainedExecutionEvent, { kind: 'refused' }> | undefined
	try {
		const events =
			op === 'execute' && request
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
		// A refusal in request shape (unknown op, unauthorized) will not heal by retrying.
		if (error instanceof AgentOpRefusedError) throw error
		if (final) return { kind: 'final', event: final }
		return { kind: 'lost', error }
	}
	if (final) return { kind: 'final', event: final }
	if (refused) {
		return {
			kind: 'refused',
			error: refused.error,
			...(refused.executionState === undefined ? {} : { executionState: refused.executionState }),
		}
	}
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
		const op = mode === 'execute' ? 'execute' : 'attach-execution'
		let attempt: Attempt
		try {
			attempt = await attemptOnce(host, watch, op, plan.execute, signal, disarm)
		} finally {
			clearTimeout(timer)
		}
		if (attempt.kind === 'final') return attempt.event
		if (attempt.kind === 'refused') {
			if (mode === 'execute' && attempt.error.startsWith('execution_not_reserved')) {
				// Someone (an earlier attempt of ours, or another host) already started this id.
				mode = 'attach'
				continue
			}
			if (mode === 'attach' && attempt.executionState === 'reserved' && plan.execute) {
				// The execute never reached the guest: nothing runs yet, so starting it is safe.
				mode = 'execute'
				continue
			}
			if (mode === 'execute') throw new RemoteCommandError(attempt.error)
			throw new ExecutionNotAttachableError(
				watch.executionId,
				attempt.error,
				parseExecutionState(attempt.executionState),
			)
		}
		lastLoss = attempt.error
		lostAt ??= performance.now()
		mode = 'attach'
		await pause(plan.stop)
	}
}

/** The `SandboxExecResult` a finished execution reads as, whoever watched it. */
function resultOf(event: FinalEvent, watch: ExecutionWatch): SandboxExecResult {
	if (event.kind === 'result') {
		const { metadata } = event
		const result = event.cancelled
			? abortedResult(metadata, watch.output, metadata.durationMs)
			: completedResult(metadata, watch.output)
		return watch.withGap(result)
	}
	if (event.outcome === 'failed') throw new RemoteCommandError(event.error ?? 'execution failed')
	if (event.outcome === 'cancelled' && !event.started) return neverStartedResult(0)
	const metadata = event.metadata
	if (!metadata) {
		throw new RemoteProtocolError('attach-execution: a finished execution without its result')
	}
	const result =
		event.outcome === 'cancelled' || event.cancelled
			? abortedResult(metadata, watch.output, metadata.durationMs)
			: completedResult(metadata, watch.output)
	return watch.withGap(result)
}

/**
 * A confirmed cancel by id, from any process: attempts until one is acknowledged inside the
 * confirm window. An id the guest does not hold ⇒ `ExecutionCancelRefusedError`; a guest that
 * could not confirm, or no answer in the window ⇒ `RemoteCancellationUnknownError`. Retires nothing.
 */
export async function cancelExecutionById(
	host: DetachableExecutionHost,
	executionId: string,
	signal?: AbortSignal,
): Promise<RemoteCancellationAcknowledgement> {
	const deadline = performance.now() + host.cancelConfirmTimeoutMs
	let lastError: unknown
	for (;;) {
		signal?.throwIfAborted()
		const remaining = deadline - performance.now()
		if (remaining <= 0) {
			throw new RemoteCancellationUnknownError(
				executionId,
				`no cancellation was acknowledged within ${host.cancelConfirmTimeoutMs} ms`,
				lastError === undefined ? {} : { cause: lastError },
			)
		}
		let reply: Record<string, unknown>
		try {
			reply = await boundedControlRequest(
				'cancel-execution',
				Math.max(1, Math.min(host.controlRequestTimeoutMs, remaining)),
				signal,
				(s) => host.transport.cancelExecution(executionId, s),
			)
		} catch (error) {
			if (signal?.aborted) throw error
			lastError = error
			await pause(signal)
			continue
		}
		const ack = parseCancellationAck(reply)
		if (ack) return ack
		const refusal = typeof reply.error === 'string' ? reply.error : 'unspecified refusal'
		if (refusal === 'unknown_execution' || refusal === 'invalid_execution_id') {
			throw new ExecutionCancelRefusedError(executionId, refusal)
		}
		if (refusal === 'cancellation_unconfirmed') {
			throw new RemoteCancellationUnknownError(
				executionId,
				'the guest could not confirm termination and is retiring',
			)
		}
		lastError = new RemoteProtocolError(`cancel-execution: ${refusal.slice(0, 200)}`)
		await pause(signal)
	}
}

type Settled<T> =
	| { readonly ok: true; readonly value: T }
	| { readonly ok: false; readonly error: unknown }

function settle<T>(promise: Promise<T>): Promise<Settled<T>> {
	return promise.then(
		(value) => ({ ok: true, value }),
		(error: unknown) => ({ ok: false, error }),
	)
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
	return new Promise((resolve) => {
		const timer = setTimeout(() => resolve(undefined), ms)
		void promise.then((value) => {
			clearTimeout(timer)
			resolve(value)
		})
	})
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
	await requireExecutionAttach(host.transport, 'exec', caller)
	if (caller?.aborted) return neverStartedResult(0)
	const executionId = options.executionId ?? `exec_${randomUUID()}`
	if (!EXECUTION_ID_PATTERN.test(executionId)) {
		throw new SandboxConfigError('executionId', 'must be exec_ followed by a canonical UUID')
	}

	let reply: Record<string, unknown>
	try {
		reply = await boundedControlRequest(
			'reserve-execution',
			host.controlRequestTimeoutMs,
			caller,
			(s) => host.transport.reserveExecution(s, executionId),
		)
	} catch (error) {
		if (caller?.aborted) return neverStartedResult(elapsed())
		throw error
	}
	if (parseReservation(reply).executionId !== executionId) {
		throw new RemoteProtocolError('reserve-execution: the guest answered another executionId')
	}
	// An id the guest already holds is not started again: this call follows that run instead.
	const heldState = parseExecutionState(reply.state)
	notify(options.onExecutionId, executionId)

	const watch = new ExecutionWatch(executionId, 0, options.onOutput, options.onGap)
	const stopWatching = new AbortController()
	const stop = options.detachSignal
		? AbortSignal.any([options.detachSignal, stopWatching.signal])
		: stopWatching.signal
	const request: ExecuteRequest = {
		executionId,
		command,
		args,
		...(options.cwd === undefined ? {} : { cwd: options.cwd }),
		...(options.env === undefined ? {} : { env: options.env }),
		timeoutMs: options.timeout ?? host.defaultExecutionTimeoutMs,
		retainOutput: true,
	}
	const following = settle(
		follow(host, watch, {
			execute: request,
			startWith: heldState === undefined || heldState === 'reserved' ? 'execute' : 'attach',
			reattachWindowMs: options.reattachWindowMs ?? DEFAULT_REATTACH_WINDOW_MS,
			stop,
		}),
	)

	let onAbort: () => void = () => {}
	const cancellation = new Promise<Settled<RemoteCancellationAcknowledgement>>((resolve) => {
		onAbort = () => resolve(settle(cancelExecutionById(host, executionId)))
	})
	caller?.addEventListener('abort', onAbort, { once: true })
	if (caller?.aborted) onAbort()
	try {
		const first = await Promise.race([
			following.then((outcome) => ({ from: 'follow' as const, outcome })),
			cancellation.then((outcome) => ({ from: 'cancel' as const, outcome })),
		])
		if (first.from === 'follow') {
			if (!first.outcome.ok) throw first.outcome.error
			const result = resultOf(first.outcome.value, watch)
			if (caller?.aborted && !result.aborted) {
				return abortedResult(metadataOf(first.outcome.value), watch.output, elapsed())
			}
			return result
		}
		const cancelled = first.outcome
		if (!cancelled.ok) {
			stopWatching.abort()
			if (cancelled.error instanceof ExecutionCancelRefusedError) {
				throw new RemoteCancellationUnknownError(executionId, cancelled.error.message, {
					cause: cancelled.error,
				})
			}
			throw cancelled.error
		}
		const ack = cancelled.value
		if (!ack.started) {
			stopWatching.abort()
			return neverStartedResult(elapsed())
		}
		const drained = await withTimeout(following, host.resultDrainTimeoutMs)
		stopWatching.abort()
		const metadata = drained?.ok ? metadataOf(drained.value) : ack.result
		return watch.withGap(abortedResult(metadata, watch.output, elapsed()))
	} finally {
		caller?.removeEventListener('abort', onAbort)
		stopWatching.abort()
	}
}

/** The run's terminal metadata, when the guest reported one. */
function metadataOf(event: FinalEvent): RemoteTerminalMetadata | undefined {
	return event.metadata
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
	await requireExecutionAttach(host.transport, 'attachExecution', options.signal)
	const fromOffset = options.fromOffset ?? 0
	if (!Number.isSafeInteger(fromOffset) || fromOffset < 0) {
		throw new SandboxConfigError('fromOffset', 'must be a non-negative safe integer')
	}
	const watch = new ExecutionWatch(executionId, fromOffset, options.onOutput, options.onGap)
	const stop = options.signal ?? new AbortController().signal
	const event = await follow(host, watch, {
		startWith: 'attach',
		reattachWindowMs: options.reattachWindowMs ?? DEFAULT_REATTACH_WINDOW_MS,
		stop,
	})
	return resultOf(event, watch)
}
