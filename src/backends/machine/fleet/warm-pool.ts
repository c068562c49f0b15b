/**
 * Sandboxes started (and probed) ahead of `create()`. Taking one is synchronous; each take starts a
 * replacement in the background, `refillDelayMs` later: a launch is the busiest work a host does
 * (its own event loop, then a whole new agent booting), and the sandbox just handed out is about to
 * run its first commands, so they do not share the machine with it. A take that finds the pool
 * empty starts the replacement at once (the caller is starting one cold anyway). A failed start is retried with capped exponential backoff and only
 * ever reported to `onError` — nothing here can become an unhandled rejection or crash the host.
 */

export interface WarmPoolMember {
	hasExited(): boolean
	release(): Promise<void>
}

export interface WarmPoolOptions<T extends WarmPoolMember> {
	readonly size: number
	readonly start: (signal: AbortSignal) => Promise<T>
	/** Told when a started member joins the ready set; must not throw. */
	readonly onReady?: (member: T) => void
	/** Told about failed starts and failed releases; must not throw. */
	readonly onError?: (error: unknown) => void
	readonly initialBackoffMs?: number
	readonly maxBackoffMs?: number
	/** How long after a hand-out its replacement starts (default `WARM_POOL_REFILL_DELAY_MS`). */
	readonly refillDelayMs?: number
}

export const WARM_POOL_INITIAL_BACKOFF_MS = 200
export const WARM_POOL_MAX_BACKOFF_MS = 30_000
/** Long enough for a handed-out sandbox's first few commands on a quiet host (a few ms each). */
export const WARM_POOL_REFILL_DELAY_MS = 100

export class WarmPool<T extends WarmPoolMember> {
	readonly #options: WarmPoolOptions<T>
	readonly #ready: T[] = []
	readonly #inFlight = new Set<Promise<void>>()
	readonly #stop = new AbortController()
	#starting = 0
	#failures = 0
	#closing: Promise<void> | undefined
	#refill: NodeJS.Timeout | undefined

	constructor(options: WarmPoolOptions<T>) {
		this.#options = options
	}

	/** Members ready to hand out right now. */
	get readyCount(): number {
		return this.#ready.length
	}

	/** Starts members until ready + starting reaches the target size. */
	fill(): void {
		while (!this.#stop.signal.aborted && this.#ready.length + this.#starting < this.#options.size) {
			this.#startOne()
		}
	}

	/**
	 * A live member, or undefined when none is ready. Replenishes either way: after
	 * `refillDelayMs` when a member is handed out, at once when none was.
	 */
	take(): T | undefined {
		let member = this.#ready.shift()
		while (member?.hasExited()) {
			this.#discard(member)
			member = this.#ready.shift()
		}
		if (member === undefined) this.fill()
		else this.#scheduleFill()
		return member
	}

	#scheduleFill(): void {
		if (this.#refill !== undefined || this.#stop.signal.aborted) return
		const delayMs = this.#options.refillDelayMs ?? WARM_POOL_REFILL_DELAY_MS
		this.#refill = setTimeout(() => {
			this.#refill = undefined
			this.fill()
		}, delayMs)
		// A pending refill alone never keeps the host process alive.
		this.#refill.unref()
	}

	/** Stops replenishing, aborts members still starting and releases every ready one. Idempotent. */
	close(): Promise<void> {
		this.#closing ??= this.#close()
		return this.#closing
	}

	async #close(): Promise<void> {
		this.#stop.abort(new Error('warm pool closed'))
		clearTimeout(this.#refill)
		this.#refill = undefined
		while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight])
		const members = this.#ready.splice(0)
		await Promise.allSettled(members.map((member) => this.#releaseQuietly(member)))
	}

	#startOne(): void {
		this.#starting++
		const run = this.#run().finally(() => {
			this.#inFlight.delete(run)
		})
		this.#inFlight.add(run)
	}

	async #run(): Promise<void> {
		const signal = this.#stop.signal
		try {
			for (;;) {
				if (signal.aborted) return
				try {
					const member = await this.#options.start(signal)
					if (signal.aborted) {
						await this.#releaseQuietly(member)
						return
					}
					this.#failures = 0
					this.#ready.push(member)
					try {
						this.#options.onReady?.(member)
					} catch {
						// An observer's failure is not the pool's.
					}
					return
				} catch (error) {
					if (signal.aborted) return
					this.#report(error)
					this.#failures++
					await this.#sleep(this.#backoffMs(), signal)
				}
			}
		} finally {
			this.#starting--
		}
	}

	#backoffMs(): number {
		const initial = this.#options.initialBackoffMs ?? WARM_POOL_INITIAL_BACKOFF_MS
		const max = this.#options.maxBackoffMs ?? WARM_POOL_MAX_BACKOFF_MS
		return Math.min(max, initial * 2 ** Math.min(this.#failures - 1, 20))
	}

	#sleep(ms: number, signal: AbortSignal): Promise<void> {
		return new Promise((resolve) => {
			const timer = setTimeout(done, ms)
			function done() {
				clearTimeout(timer)
				signal.removeEventListener('abort', done)
				resolve()
			}
			signal.addEventListener('abort', done, { once: true })
		})
	}

	#discard(member: T): void {
		const run = this.#releaseQuietly(member).finally(() => {
			this.#inFlight.delete(run)
		})
		this.#inFlight.add(run)
	}

	async #releaseQuietly(member: T): Promise<void> {
		try {
			await member.release()
		} catch (error) {
			this.#report(error)
		}
	}

	#report(error: unknown): void {
		try {
			this.#options.onError?.(error)
		} catch {
			// A throwing observer must not take the pool down.
		}
	}
}
