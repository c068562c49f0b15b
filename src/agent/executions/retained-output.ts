/**
 * The output of one execution that asked to be retained (`execute { retainOutput: true }`): its
 * `OutputLog` (one interleaved byte-offset space, oldest bytes evicted past the budget) plus the
 * readers following it live — the `execute` connection and any `attach-execution`. The command
 * writes into the log and never waits for a reader, so a run nobody watches keeps running; a
 * reader that falls more than one log behind is dropped (it reattaches from its offset). Offsets
 * count UTF-8 bytes of the text the run produced.
 */
import type { RetainedDeltaEvent } from '../../wire/protocol.js'
import { OutputLog, type OutputStream } from '../process/output-log.js'
import type { OutputSink } from './execution-process.js'

/** One live follower of a retained run. */
export interface RetainedOutputReader {
	deliver(event: RetainedDeltaEvent): void
}

export interface RetainedFollow {
	/** Where the replay starts (≥ the requested offset when bytes were evicted). */
	readonly fromOffset: number
	/** Bytes between the requested offset and `fromOffset` that the log no longer holds. */
	readonly droppedBytes: number
	/** Everything held from `fromOffset`, to send before any live delta. */
	readonly replay: readonly RetainedDeltaEvent[]
	/** Stops live delivery to the reader. */
	stop(): void
}

function deltaType(stream: OutputStream): RetainedDeltaEvent['type'] {
	return stream === 'stdout' ? 'stdout_delta' : 'stderr_delta'
}

export class RetainedOutput {
	readonly log: OutputLog
	readonly #readers = new Set<RetainedOutputReader>()

	constructor(capacityBytes: number) {
		this.log = new OutputLog(capacityBytes)
	}

	get nextOffset(): number {
		return this.log.nextOffset
	}

	get readerCount(): number {
		return this.#readers.size
	}

	/** Appends what the run wrote and hands the delta to every live reader. */
	append(stream: OutputStream, text: string): void {
		const { offset, nextOffset } = this.log.append(stream, Buffer.from(text, 'utf8'))
		if (offset === nextOffset) return
		const event: RetainedDeltaEvent = { type: deltaType(stream), data: text, offset, nextOffset }
		for (const reader of [...this.#readers]) reader.deliver(event)
	}

	/**
	 * The replay from `fromOffset` and live delivery of everything after it, in one synchronous
	 * step so nothing is missed or sent twice. Throws `OutputLogOffsetError` past the end.
	 */
	follow(reader: RetainedOutputReader, fromOffset = 0): RetainedFollow {
		const read = this.log.read(fromOffset)
		const replay = read.entries.map(
			(entry): RetainedDeltaEvent => ({
				type: deltaType(entry.stream),
				data: entry.data.toString('utf8'),
				offset: entry.offset,
				nextOffset: entry.offset + entry.data.length,
			}),
		)
		this.#readers.add(reader)
		return {
			fromOffset: read.fromOffset,
			droppedBytes: read.droppedBytes,
			replay,
			stop: () => {
				this.#readers.delete(reader)
			},
		}
	}

	/** Where the run writes: never asks it to wait. */
	sink(): OutputSink {
		return {
			write: (stream, text) => {
				this.append(stream, text)
				return true
			},
			onDrain: (resume) => resume(),
		}
	}
}
