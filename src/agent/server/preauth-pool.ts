/**
 * The bounds on what unauthenticated peers may make the agent hold, token modes only (README
 * "Guest agent transports and the per-instance token"): at most `NAMZU_AGENT_MAX_PREAUTH_CONNECTIONS`
 * connections at once — a full pool evicts its OLDEST member so squatters can never starve a later
 * caller or the `healthz` probe — sharing `NAMZU_AGENT_MAX_PREAUTH_BUFFER_BYTES` of buffered input,
 * each retired after `NAMZU_AGENT_PREAUTH_IDLE_TIMEOUT_MS` of silence or
 * `NAMZU_AGENT_PREAUTH_DEADLINE_MS` from accept (reset by nothing). Authenticating releases a
 * connection from all of it. The pool only decides; the connection layer refuses and destroys.
 */
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'

export interface PreauthLimits {
	readonly maxConnections: number
	readonly maxBufferBytes: number
	readonly idleTimeoutMs: number
	readonly deadlineMs: number
}

/** Called when the pool retires a member; the argument is the refusal to send. */
export type PreauthRetire = (refusal: string) => void

export class PreauthMember {
	readonly #pool: PreauthPool
	readonly #limits: PreauthLimits
	readonly #retire: PreauthRetire
	readonly #deadline: NodeJS.Timeout
	#idle: NodeJS.Timeout
	#heldBytes = 0
	#released = false

	constructor(pool: PreauthPool, limits: PreauthLimits, retire: PreauthRetire) {
		this.#pool = pool
		this.#limits = limits
		this.#retire = retire
		this.#deadline = setTimeout(
			() =>
				this.#expire(
					formatRefusal(
						AGENT_REFUSAL.preauth_deadline_exceeded,
						`not authenticated within ${limits.deadlineMs} ms (NAMZU_AGENT_PREAUTH_DEADLINE_MS)`,
					),
				),
			limits.deadlineMs,
		)
		this.#idle = this.#idleTimer(limits.idleTimeoutMs)
	}

	get heldBytes(): number {
		return this.#heldBytes
	}

	/**
	 * Accounts `incomingBytes` about to be handed to the frame reader and restarts the idle timer.
	 * Returns the refusal when the shared budget cannot take them.
	 */
	receive(incomingBytes: number): string | undefined {
		if (this.#released) return undefined
		const limits = this.#limits
		const total = this.#pool.bufferedBytes + incomingBytes
		if (total > limits.maxBufferBytes) {
			return formatRefusal(
				AGENT_REFUSAL.preauth_buffer_exhausted,
				`unauthenticated connections would hold ${total} bytes, limit ${limits.maxBufferBytes} (NAMZU_AGENT_MAX_PREAUTH_BUFFER_BYTES)`,
			)
		}
		this.#setHeld(this.#heldBytes + incomingBytes)
		clearTimeout(this.#idle)
		this.#idle = this.#idleTimer(limits.idleTimeoutMs)
		return undefined
	}

	/** What the frame reader still holds after parsing. */
	settle(heldBytes: number): void {
		if (!this.#released) this.#setHeld(heldBytes)
	}

	/** Authenticated or closed: leaves the pool, gives its bytes back, stops its timers. */
	release(): void {
		if (this.#released) return
		this.#released = true
		clearTimeout(this.#deadline)
		clearTimeout(this.#idle)
		this.#setHeld(0)
		this.#pool.forget(this)
	}

	/** Evicted to make room: released, then told why. */
	evict(refusal: string): void {
		this.release()
		this.#retire(refusal)
	}

	#setHeld(bytes: number): void {
		this.#pool.adjust(bytes - this.#heldBytes)
		this.#heldBytes = bytes
	}

	#idleTimer(idleTimeoutMs: number): NodeJS.Timeout {
		return setTimeout(
			() =>
				this.#expire(
					formatRefusal(
						AGENT_REFUSAL.preauth_idle_timeout,
						`silent for ${idleTimeoutMs} ms before authenticating (NAMZU_AGENT_PREAUTH_IDLE_TIMEOUT_MS)`,
					),
				),
			idleTimeoutMs,
		)
	}

	#expire(refusal: string): void {
		if (this.#released) return
		this.evict(refusal)
	}
}

export class PreauthPool {
	readonly limits: PreauthLimits
	/** Insertion order is admission order: the first member is the oldest. */
	readonly #members = new Set<PreauthMember>()
	#bufferedBytes = 0

	constructor(limits: PreauthLimits) {
		this.limits = limits
	}

	get size(): number {
		return this.#members.size
	}

	get bufferedBytes(): number {
		return this.#bufferedBytes
	}

	/** Admits a new connection, evicting the oldest member first when the pool is full. */
	admit(retire: PreauthRetire): PreauthMember {
		while (this.#members.size >= this.limits.maxConnections) {
			const oldest = this.#members.values().next().value
			if (!oldest) break
			oldest.evict(
				formatRefusal(
					AGENT_REFUSAL.too_many_unauthenticated_connections,
					`limit ${this.limits.maxConnections} (NAMZU_AGENT_MAX_PREAUTH_CONNECTIONS)`,
				),
			)
		}
		const member = new PreauthMember(this, this.limits, retire)
		this.#members.add(member)
		return member
	}

	/** @internal bookkeeping for members. */
	adjust(deltaBytes: number): void {
		this.#bufferedBytes += deltaBytes
	}

	/** @internal bookkeeping for members. */
	forget(member: PreauthMember): void {
		this.#members.delete(member)
	}
}
