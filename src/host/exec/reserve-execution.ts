/**
 * The one reserve step, first on every exec path: only a reservation lets the peer prove later
 * that a run never started. The request runs under its own control timeout and the caller's signal;
 * a caller abort at any point before the reservation is read (the request itself or a refusal
 * racing it) means nothing ran. Refusals become their errors through the one table.
 */
import { AGENT_OP } from '../../wire/protocol.js'
import { boundedControlRequest } from './bounded-control-request.js'
import type { RemoteReservation } from './remote-execution-messages.js'
import { parseReservation } from './remote-execution-reply.js'

export interface ReserveOptions {
	/** One `reserve-execution` request; answers the raw reply (refusals included). */
	readonly request: (signal: AbortSignal) => Promise<unknown>
	readonly controlRequestTimeoutMs: number
	readonly caller: AbortSignal | undefined
	/** Told when the round trip settled, whatever its outcome (the timing marks it). */
	readonly onSettled?: () => void
}

export type ReserveOutcome =
	| { readonly kind: 'reserved'; readonly reservation: RemoteReservation }
	| { readonly kind: 'aborted' }

export async function reserveExecution(options: ReserveOptions): Promise<ReserveOutcome> {
	const { caller } = options
	let reply: unknown
	try {
		reply = await boundedControlRequest(
			AGENT_OP.reserveExecution,
			options.controlRequestTimeoutMs,
			caller,
			options.request,
		)
	} catch (error) {
		if (caller?.aborted) return { kind: 'aborted' }
		throw error
	} finally {
		options.onSettled?.()
	}
	try {
		return { kind: 'reserved', reservation: parseReservation(reply) }
	} catch (error) {
		// A refusal that raced the caller's abort: nothing was reserved, so nothing ran.
		if (caller?.aborted) return { kind: 'aborted' }
		throw error
	}
}
