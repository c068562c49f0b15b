/**
 * What one execution ended as, decided from what was observed — pure, shared by the plain and the
 * detachable path. The execution and a cancellation race (`cancellation-race.ts`); whichever
 * settles first, and what the other one brought (a drained result, a reconciling
 * acknowledgement), are the facts; `decideExecutionOutcome` turns them into one of six outcomes:
 * completed, timed out, aborted, never started, failed (an error to throw) or incomplete (a
 * confirmed cancellation whose result never arrived).
 */
import { RemoteCommandError } from '../refusals/refusal-errors.js'
import type {
	RemoteCancellationAcknowledgement,
	RemoteTerminalMetadata,
} from './remote-execution-messages.js'

/** Why a cancellation was started. */
export type CancellationReason = 'caller' | 'observation-timeout' | 'reconcile'

/** How the execution side settled. */
export type ExecutionSettlement =
	/** The run finished with its result; `cancelled` when the guest says a cancel ended it. */
	| {
			readonly kind: 'ran'
			readonly metadata: RemoteTerminalMetadata
			readonly cancelled: boolean
	  }
	/** The guest reports the run was cancelled before it ever started. */
	| { readonly kind: 'never-started' }
	/** The stream failed: a guest `error` (`RemoteCommandError`), a lost connection, a bad peer. */
	| { readonly kind: 'failed'; readonly error: unknown }

/** How a cancellation settled: confirmed by an acknowledgement, or unknown (its error). */
export type CancellationSettlement =
	| { readonly kind: 'confirmed'; readonly ack: RemoteCancellationAcknowledgement }
	| { readonly kind: 'unknown'; readonly error: unknown }

export type ExecutionFacts =
	| {
			/** The execution settled first. */
			readonly first: 'execution'
			readonly execution: ExecutionSettlement
			/** The reconciling cancellation a failed execution was followed by, if any. */
			readonly cancellation?: CancellationSettlement
			readonly callerAborted: boolean
	  }
	| {
			/** A cancellation settled first. */
			readonly first: 'cancellation'
			readonly cancellation: CancellationSettlement
			readonly reason: CancellationReason
			/** What the execution brought inside the drain window; undefined when nothing did. */
			readonly execution?: ExecutionSettlement
			readonly callerAborted: boolean
	  }

export type ExecutionDecision =
	| { readonly kind: 'completed'; readonly metadata: RemoteTerminalMetadata }
	| { readonly kind: 'timed-out'; readonly metadata?: RemoteTerminalMetadata }
	/**
	 * `durationFrom: 'guest'` when the guest's own result says a cancel ended the run (someone
	 * else's cancel, or a watched run), `'call'` when it was this caller's abort.
	 */
	| {
			readonly kind: 'aborted'
			readonly metadata?: RemoteTerminalMetadata
			readonly durationFrom: 'guest' | 'call'
	  }
	| { readonly kind: 'never-started' }
	| { readonly kind: 'failed'; readonly error: unknown }
	/**
	 * The cancellation was confirmed after the run started but the result is lost: `lost-result`
	 * when the stream failed first, `drain-expired` when it did not settle inside the drain window.
	 */
	| {
			readonly kind: 'incomplete'
			readonly ack: RemoteCancellationAcknowledgement
			readonly stage: 'lost-result' | 'drain-expired'
			readonly cause?: unknown
	  }

/** A guest `error` the acknowledgement confirms as the run's own failure. */
function confirmedCommandFailure(
	execution: ExecutionSettlement | undefined,
	ack: RemoteCancellationAcknowledgement,
): execution is { readonly kind: 'failed'; readonly error: RemoteCommandError } {
	return (
		execution?.kind === 'failed' &&
		execution.error instanceof RemoteCommandError &&
		ack.state === 'failed'
	)
}

function aborted(metadata: RemoteTerminalMetadata | undefined): ExecutionDecision {
	return { kind: 'aborted', durationFrom: 'call', ...(metadata ? { metadata } : {}) }
}

function timedOut(metadata: RemoteTerminalMetadata | undefined): ExecutionDecision {
	return { kind: 'timed-out', ...(metadata ? { metadata } : {}) }
}

/** The execution settled first. */
function decideExecutionFirst(
	execution: ExecutionSettlement,
	cancellation: CancellationSettlement | undefined,
	callerAborted: boolean,
): ExecutionDecision {
	if (execution.kind === 'ran') {
		const { metadata } = execution
		if (execution.cancelled) return { kind: 'aborted', metadata, durationFrom: 'guest' }
		return callerAborted ? aborted(metadata) : { kind: 'completed', metadata }
	}
	if (execution.kind === 'never-started') return { kind: 'never-started' }
	// A failed stream is reconciled through a cancellation; without one, the failure stands.
	if (!cancellation) return { kind: 'failed', error: execution.error }
	if (cancellation.kind === 'unknown') return { kind: 'failed', error: cancellation.error }
	const { ack } = cancellation
	if (confirmedCommandFailure(execution, ack)) return { kind: 'failed', error: execution.error }
	if (callerAborted) return ack.started ? aborted(ack.result) : { kind: 'never-started' }
	if (!ack.started) return { kind: 'failed', error: execution.error }
	return { kind: 'incomplete', ack, stage: 'lost-result', cause: execution.error }
}

/** A cancellation settled first; `execution` is what the drain brought. */
function decideCancellationFirst(
	cancellation: CancellationSettlement,
	reason: CancellationReason,
	execution: ExecutionSettlement | undefined,
	callerAborted: boolean,
): ExecutionDecision {
	if (cancellation.kind === 'unknown') return { kind: 'failed', error: cancellation.error }
	const { ack } = cancellation
	if (!ack.started) return callerAborted ? { kind: 'never-started' } : timedOut(ack.result)
	if (execution?.kind === 'ran') {
		if (callerAborted) return aborted(execution.metadata)
		if (reason === 'observation-timeout') return timedOut(execution.metadata)
		return { kind: 'completed', metadata: execution.metadata }
	}
	if (callerAborted) return aborted(ack.result)
	if (confirmedCommandFailure(execution, ack)) return { kind: 'failed', error: execution.error }
	if (reason === 'observation-timeout' && ack.state === 'cancelled') return timedOut(ack.result)
	return {
		kind: 'incomplete',
		ack,
		stage: 'drain-expired',
		...(execution?.kind === 'failed' ? { cause: execution.error } : {}),
	}
}

export function decideExecutionOutcome(facts: ExecutionFacts): ExecutionDecision {
	return facts.first === 'execution'
		? decideExecutionFirst(facts.execution, facts.cancellation, facts.callerAborted)
		: decideCancellationFirst(
				facts.cancellation,
				facts.reason,
				facts.execution,
				facts.callerAborted,
			)
}
