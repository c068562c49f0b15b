/**
 * A small, bounded set of payload buffers a frame reader hands out again once their consumer gave
 * them back. A buffer is lent to exactly one frame; only the consumer's `release` returns it, so a
 * consumer that keeps (or never releases) its bytes never sees them overwritten — it simply costs a
 * fresh buffer, as if there were no pool. What the pool keeps is bounded by count and by bytes, so
 * a connection that once received a large frame does not hold its buffer for life.
 */

/** Free buffers kept at most (the consumer usually has one or two in flight). */
export const PAYLOAD_POOL_BUFFERS = 4
/** Bytes of free buffers kept at most; a larger buffer given back is left to the GC. */
export const PAYLOAD_POOL_MAX_BYTES = 4 * 1024 * 1024

/** One lent payload: the bytes, and the one-shot way to give their buffer back. */
export interface LentPayload {
	readonly payload: Buffer
	readonly release: () => void
}

export class PayloadPool {
	readonly #free: Buffer[] = []
	#freeBytes = 0
	#lent = 0

	/** Free buffers held right now (tests; diagnostics). */
	get freeCount(): number {
		return this.#free.length
	}

	/** Buffers lent and not yet given back. */
	get lentCount(): number {
		return this.#lent
	}

	/**
	 * A buffer of exactly `length` bytes (a view of a pooled one when one is large enough), whose
	 * contents are undefined; `release` gives its buffer back, at most once.
	 */
	lend(length: number): LentPayload {
		const backing = this.#take(length) ?? Buffer.allocUnsafeSlow(length)
		this.#lent++
		let released = false
		return {
			payload: backing.length === length ? backing : backing.subarray(0, length),
			release: () => {
				if (released) return
				released = true
				this.#lent--
				this.#give(backing)
			},
		}
	}

	/** The smallest free buffer that holds `length` bytes, removed from the free list. */
	#take(length: number): Buffer | undefined {
		let best = -1
		for (let i = 0; i < this.#free.length; i++) {
			const candidate = this.#free[i]
			if (candidate === undefined || candidate.length < length) continue
			const current = best < 0 ? undefined : this.#free[best]
			if (current === undefined || candidate.length < current.length) best = i
		}
		if (best < 0) return undefined
		const [buffer] = this.#free.splice(best, 1)
		if (buffer) this.#freeBytes -= buffer.length
		return buffer
	}

	#give(buffer: Buffer): void {
		if (this.#free.length >= PAYLOAD_POOL_BUFFERS) return
		if (this.#freeBytes + buffer.length > PAYLOAD_POOL_MAX_BYTES) return
		this.#free.push(buffer)
		this.#freeBytes += buffer.length
	}
}
