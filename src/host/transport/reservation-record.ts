/**
 * Which guest accepted each recent execution id: the handle the reserving request went to and the
 * boot id its reply carried (none when the id was reserved by its `execute`, whose stream carries
 * no boot id). Verdicts about one command are made against this, never against whatever the
 * transport points at since. Bounded: the oldest record goes first.
 */
import type { SandboxAgentHandle } from './agent-handle.js'

/** The guest that accepted a reservation: where the request went, the boot id it answered with. */
export interface ReservedGuest {
	readonly handle: SandboxAgentHandle
	readonly guestBootId?: string
}

/** How many accepted reservations are remembered (oldest forgotten first). */
export const RESERVATION_RECORD_LIMIT = 1024

export class ReservationRecord {
	readonly #reservations = new Map<string, ReservedGuest>()

	get(executionId: string): ReservedGuest | undefined {
		return this.#reservations.get(executionId)
	}

	note(executionId: string, guest: ReservedGuest): void {
		this.#reservations.delete(executionId)
		this.#reservations.set(executionId, guest)
		if (this.#reservations.size <= RESERVATION_RECORD_LIMIT) return
		const oldest = this.#reservations.keys().next()
		if (!oldest.done) this.#reservations.delete(oldest.value)
	}
}
