/**
 * The retained-output ring shared by detached executions and sessions: ONE byte-offset space for
 * everything a program wrote (stdout and stderr interleaved as they arrived), absolute and
 * monotonic from 0. When the ring is over its byte budget the oldest bytes are evicted; a reader
 * asking for evicted bytes is told how many it missed (`droppedBytes`) and gets what remains —
 * never a shorter stream that looks complete. Pure data structure: no I/O, no timers.
 */
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'

import { isIntegerIn, NON_NEGATIVE_INTEGER, POSITIVE_INTEGER } from '../handler/value-checks.js'

export type OutputStream = 'stdout' | 'stderr'

export interface OutputEntry {
	readonly stream: OutputStream
	/** Absolute offset of `data[0]`. */
	readonly offset: number
	readonly data: Buffer
}

export interface OutputLogRead {
	/** Where the returned bytes start (≥ the requested offset when bytes were evicted). */
	readonly fromOffset: number
	/** Bytes between the requested offset and `fromOffset` that the ring no longer holds. */
	readonly droppedBytes: number
	readonly entries: readonly OutputEntry[]
	/** Offset after the last byte written so far: where the next read continues. */
	readonly nextOffset: number
}

export class OutputLogOffsetError extends RangeError {
	override readonly name = 'OutputLogOffsetError'
	readonly requested: number
	readonly nextOffset: number

	constructor(requested: number, nextOffset: number) {
		super(
			formatRefusal(
				AGENT_REFUSAL.invalid_offset,
				`${requested} is beyond the end of the output (${nextOffset})`,
			),
		)
		this.requested = requested
		this.nextOffset = nextOffset
	}
}

export class OutputLog {
	readonly capacityBytes: number
	#entries: OutputEntry[] = []
	#head = 0
	#retainedBytes = 0
	#startOffset = 0
	#nextOffset = 0

	constructor(capacityBytes: number) {
		if (!isIntegerIn(capacityBytes, POSITIVE_INTEGER)) {
			throw new RangeError(`OutputLog capacity must be a positive integer, got ${capacityBytes}`)
		}
		this.capacityBytes = capacityBytes
	}

	/** First offset still held. */
	get startOffset(): number {
		return this.#startOffset
	}

	/** Offset the next appended byte gets; also the total ever written. */
	get nextOffset(): number {
		return this.#nextOffset
	}

	/** Bytes evicted since the start (what a reader from offset 0 would miss). */
	get droppedBytes(): number {
		return this.#startOffset
	}

	get retainedBytes(): number {
		return this.#retainedBytes
	}

	/** Appends a chunk; returns the offsets it occupies. Empty chunks are ignored. */
	append(stream: OutputStream, chunk: Uint8Array): { offset: number; nextOffset: number } {
		const offset = this.#nextOffset
		if (chunk.byteLength === 0) return { offset, nextOffset: offset }
		this.#nextOffset += chunk.byteLength
		// A chunk larger than the whole ring keeps only its tail.
		const keep = Math.min(chunk.byteLength, this.capacityBytes)
		const data = Buffer.from(chunk.subarray(chunk.byteLength - keep))
		if (keep < chunk.byteLength) {
			// It fills the ring on its own: everything older is gone, and so is its own head.
			this.#entries = []
			this.#head = 0
			this.#retainedBytes = 0
			this.#startOffset = this.#nextOffset - keep
		}
		this.#entries.push({ stream, offset: this.#nextOffset - keep, data })
		this.#retainedBytes += keep
		this.#evict()
		return { offset, nextOffset: this.#nextOffset }
	}

	/** Everything held from `fromOffset` on (default: the oldest byte held). */
	read(fromOffset: number = this.#startOffset): OutputLogRead {
		if (!isIntegerIn(fromOffset, NON_NEGATIVE_INTEGER)) {
			throw new OutputLogOffsetError(fromOffset, this.#nextOffset)
		}
		if (fromOffset > this.#nextOffset) throw new OutputLogOffsetError(fromOffset, this.#nextOffset)
		const start = Math.max(fromOffset, this.#startOffset)
		const entries: OutputEntry[] = []
		for (let i = this.#head; i < this.#entries.length; i++) {
			const entry = this.#entries[i]
			if (!entry) continue
			const end = entry.offset + entry.data.length
			if (end <= start) continue
			if (entry.offset >= start) entries.push(entry)
			else
				entries.push({ ...entry, offset: start, data: entry.data.subarray(start - entry.offset) })
		}
		return {
			fromOffset: start,
			droppedBytes: start - fromOffset,
			entries,
			nextOffset: this.#nextOffset,
		}
	}

	#evict(): void {
		while (this.#retainedBytes > this.capacityBytes) {
			const oldest = this.#entries[this.#head]
			if (!oldest) break
			const excess = this.#retainedBytes - this.capacityBytes
			if (oldest.data.length <= excess) {
				this.#head++
				this.#retainedBytes -= oldest.data.length
				this.#startOffset = oldest.offset + oldest.data.length
			} else {
				this.#entries[this.#head] = {
					...oldest,
					offset: oldest.offset + excess,
					data: oldest.data.subarray(excess),
				}
				this.#retainedBytes -= excess
				this.#startOffset = oldest.offset + excess
			}
		}
		// Compact the array now and then instead of shifting on every eviction.
		if (this.#head > 1024 && this.#head * 2 > this.#entries.length) {
			this.#entries = this.#entries.slice(this.#head)
			this.#head = 0
		}
	}
}
