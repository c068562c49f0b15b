/**
 * What the `watch` tool holds on the host: live watches of one sandbox, each buffering the last
 * `WATCH_BUFFER_EVENTS` changes under increasing sequence numbers, so a model polls with a cursor
 * (`<watch id>:<seq>`) instead of holding a stream. A watch nobody polled for `WATCH_IDLE_MS`
 * ends, as do the oldest past `MAX_WATCHES`; a cursor older than what is buffered is told as lost.
 */
import { randomBytes } from 'node:crypto'
import type { Sandbox, SandboxWatchEvent } from '../contract-entry.js'

/** Changes a watch keeps for its pollers. */
export const WATCH_BUFFER_EVENTS = 1000
/** A watch no call has read for this long is closed. */
export const WATCH_IDLE_MS = 10 * 60_000
/** Live watches per sandbox; opening one more closes the least recently read. */
export const MAX_WATCHES = 16

interface Buffered {
	readonly seq: number
	readonly event: SandboxWatchEvent
}

/** One live watch: its buffer, and who waits for the next change. */
export class ToolWatch {
	readonly id = randomBytes(6).toString('hex')
	readonly #controller = new AbortController()
	readonly #buffer: Buffered[] = []
	readonly #waiters = new Set<() => void>()
	#nextSeq = 1
	#idle: NodeJS.Timeout | undefined
	/** Why the watch ended on its own (its path vanished, the sandbox ended), if it did. */
	ended: string | undefined
	lastReadMs = Date.now()

	constructor(
		sandbox: Sandbox & Required<Pick<Sandbox, 'watch'>>,
		readonly path: string,
		readonly recursive: boolean,
		private readonly onClose: (watch: ToolWatch) => void,
	) {
		void this.#pump(sandbox)
		this.touch()
	}

	async #pump(sandbox: Sandbox & Required<Pick<Sandbox, 'watch'>>): Promise<void> {
		try {
			const signal = this.#controller.signal
			for await (const event of sandbox.watch(this.path, { recursive: this.recursive, signal })) {
				this.#buffer.push({ seq: this.#nextSeq++, event })
				if (this.#buffer.length > WATCH_BUFFER_EVENTS) this.#buffer.shift()
				this.#wake()
			}
			this.ended ??= 'the watch ended'
		} catch (error) {
			if (!this.#controller.signal.aborted)
				this.ended = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
		}
		this.#wake()
	}

	#wake(): void {
		for (const wake of this.#waiters) wake()
		this.#waiters.clear()
	}

	touch(): void {
		this.lastReadMs = Date.now()
		clearTimeout(this.#idle)
		this.#idle = setTimeout(() => this.close(), WATCH_IDLE_MS)
		this.#idle.unref()
	}

	/** The sequence number of the last change seen (0 before any). */
	get lastSeq(): number {
		return this.#nextSeq - 1
	}

	/** Changes after `afterSeq`, at most `max`; `lost` when some were dropped from the buffer. */
	since(
		afterSeq: number,
		max: number,
	): { events: SandboxWatchEvent[]; lastSeq: number; lost: boolean } {
		const oldest = this.#buffer[0]?.seq ?? this.#nextSeq
		const taken = this.#buffer.filter((entry) => entry.seq > afterSeq).slice(0, max)
		return {
			events: taken.map((entry) => entry.event),
			lastSeq: taken.at(-1)?.seq ?? Math.min(afterSeq, this.lastSeq),
			lost: afterSeq + 1 < oldest,
		}
	}

	/** Resolves at the next change, the watch's end, the abort, or after `waitMs`. */
	waitForChange(waitMs: number, signal: AbortSignal | undefined): Promise<void> {
		if (this.ended !== undefined || waitMs <= 0) return Promise.resolve()
		return new Promise((resolve) => {
			const done = () => {
				clearTimeout(timer)
				signal?.removeEventListener('abort', done)
				this.#waiters.delete(done)
				resolve()
			}
			const timer = setTimeout(done, waitMs)
			signal?.addEventListener('abort', done, { once: true })
			this.#waiters.add(done)
		})
	}

	close(): void {
		clearTimeout(this.#idle)
		this.#controller.abort()
		this.ended ??= 'closed'
		this.#wake()
		this.onClose(this)
	}
}

/** The live watches of one sandbox, by id and by what they watch. */
export class WatchState {
	readonly #watches = new Map<string, ToolWatch>()

	find(id: string): ToolWatch | undefined {
		return this.#watches.get(id)
	}

	/** The live watch of `path` (same `recursive`), or a new one. */
	open(
		sandbox: Sandbox & Required<Pick<Sandbox, 'watch'>>,
		path: string,
		recursive: boolean,
	): ToolWatch {
		for (const watch of this.#watches.values()) {
			if (watch.path === path && watch.recursive === recursive && watch.ended === undefined)
				return watch
		}
		if (this.#watches.size >= MAX_WATCHES) {
			const stalest = [...this.#watches.values()].sort((a, b) => a.lastReadMs - b.lastReadMs)[0]
			stalest?.close()
		}
		const watch = new ToolWatch(sandbox, path, recursive, (closed) =>
			this.#watches.delete(closed.id),
		)
		this.#watches.set(watch.id, watch)
		return watch
	}

	close(): void {
		for (const watch of [...this.#watches.values()]) watch.close()
	}
}
