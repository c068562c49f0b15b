/**
 * Subscribers of one kind of event, with the items that arrived before anyone subscribed held (up
 * to a byte bound) and handed to the first subscriber, so a session's first output is not lost in
 * the gap between "ready" and the caller's `onData`.
 */

/** What is held for a first subscriber by default: past it the oldest held items are dropped. */
export const MAX_HELD_BYTES = 1024 * 1024

export class ListenerSet<T> {
	readonly #listeners = new Set<(item: T) => void>()
	readonly #pending: T[] = []
	readonly #sizeOf: (item: T) => number
	readonly #maxPendingBytes: number
	#pendingBytes = 0
	#everSubscribed = false

	constructor(sizeOf: (item: T) => number, maxPendingBytes = MAX_HELD_BYTES) {
		this.#sizeOf = sizeOf
		this.#maxPendingBytes = maxPendingBytes
	}

	subscribe(listener: (item: T) => void): () => void {
		this.#listeners.add(listener)
		if (!this.#everSubscribed) {
			this.#everSubscribed = true
			const pending = this.#pending.splice(0)
			this.#pendingBytes = 0
			for (const item of pending) this.#call(listener, item)
		}
		return () => {
			this.#listeners.delete(listener)
		}
	}

	emit(item: T): void {
		if (!this.#everSubscribed) {
			const size = this.#sizeOf(item)
			// Past the bound the oldest held output is dropped: nobody is listening yet.
			while (this.#pending.length > 0 && this.#pendingBytes + size > this.#maxPendingBytes) {
				const dropped = this.#pending.shift()
				if (dropped !== undefined) this.#pendingBytes -= this.#sizeOf(dropped)
			}
			this.#pending.push(item)
			this.#pendingBytes += size
			return
		}
		for (const listener of [...this.#listeners]) this.#call(listener, item)
	}

	#call(listener: (item: T) => void, item: T): void {
		try {
			listener(item)
		} catch {
			// A listener must not throw; if it does, the session keeps serving the others.
		}
	}
}
