/**
 * The one cancel-confirm loop: cancel attempts, each bounded by the control timeout and what remains
 * of the confirm window, 50 ms apart, until one is acknowledged; none inside the window ⇒
 * `RemoteCancellationUnknownError` (the outcome is unknown and the unit must be retired). The plain
 * path retries every refusal (a guest that restarted may still answer); the by-id path ends at once
 * on the refusals the one table names for `cancel` (`unknown_execution`, `invalid_execution_id` ⇒
 * `ExecutionCancelRefusedError`, `cancellation_unconfirmed` ⇒ `RemoteCancellationUnknownError`) and
 * with the caller's abort. Both end at once when the guest died (`GuestDiedError`): nothing is left
 * to cancel or to answer.
 */

import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { isRecord } from '../../common/is-record.js'
import { AGENT_OP } from '../../wire/protocol.js'
import { RemoteCancellationUnknownError, RemoteProtocolError } from '../refusals/refusal-errors.js'
import { namedRefusalError } from '../refusals/refusal-to-error.js'
import { refusalOf } from '../transport/exchange.js'
import { GuestDiedError } from '../transport/transport-errors.js'
import { boundedControlRequest } from './bounded-control-request.js'
import type { RemoteCancellationAcknowledgement } from './remote-execution-messages.js'
import { parseCancellationAck } from './remote-execution-reply.js'

/** Pause between two cancel attempts. */
export const CANCEL_RETRY_PAUSE_MS = 50

export interface CancelConfirmOptions {
	readonly executionId: string
	/** One `cancel-execution` request; answers the raw reply (refusals included). */
	readonly cancel: (signal: AbortSignal) => Promise<unknown>
	readonly controlRequestTimeoutMs: number
	readonly cancelConfirmTimeoutMs: number
	/** `by-id` ends at once on the refusals the table names for `cancel`; `retry` retries them. */
	readonly refusals: 'retry' | 'by-id'
	/** Ends the attempts with the caller's abort (by id); the plain path passes none. */
	readonly signal?: AbortSignal
}

function describeReply(reply: unknown): string {
	if (isRecord(reply) && 'error' in reply) return String(reply.error).slice(0, 200)
	return 'not an acknowledgement'
}

/** The refusal that ends a by-id cancel at once, if `reply` is one. */
function finalRefusal(reply: unknown, executionId: string): Error | undefined {
	if (!isRecord(reply)) return undefined
	const refusal = refusalOf(reply)
	if (!refusal) return undefined
	return namedRefusalError('cancel', refusal, { op: AGENT_OP.cancelExecution, executionId })
}

/** The pause before the next attempt, never past the window; an abort ends it early. */
async function pause(deadline: number, signal: AbortSignal | undefined): Promise<void> {
	const ms = Math.min(CANCEL_RETRY_PAUSE_MS, Math.max(0, deadline - performance.now()))
	await sleep(ms, undefined, signal ? { signal } : {}).catch(() => undefined)
}

export async function confirmCancellation(
	options: CancelConfirmOptions,
): Promise<RemoteCancellationAcknowledgement> {
	const { executionId, signal } = options
	const deadline = performance.now() + options.cancelConfirmTimeoutMs
	let lastError: unknown
	for (;;) {
		signal?.throwIfAborted()
		const remaining = deadline - performance.now()
		if (remaining <= 0) {
			throw new RemoteCancellationUnknownError(
				executionId,
				`no cancellation was acknowledged within ${options.cancelConfirmTimeoutMs} ms`,
				lastError === undefined ? {} : { cause: lastError },
			)
		}
		const bound = Math.max(1, Math.min(options.controlRequestTimeoutMs, remaining))
		let reply: unknown
		try {
			reply = await boundedControlRequest(AGENT_OP.cancelExecution, bound, signal, options.cancel)
		} catch (error) {
			if (signal?.aborted || error instanceof GuestDiedError) throw error
			lastError = error
			await pause(deadline, signal)
			continue
		}
		const ack = parseCancellationAck(reply)
		if (ack) return ack
		const final = options.refusals === 'by-id' ? finalRefusal(reply, executionId) : undefined
		if (final) throw final
		lastError = new RemoteProtocolError(`cancel-execution: ${describeReply(reply)}`)
		await pause(deadline, signal)
	}
}
