/**
 * The incremental frame reader shared by the guest agent and the host (the codec is frame.ts, the
 * binary frame binary-frame.ts). Small frames are parsed out of one accumulation buffer; a large
 * binary frame's payload is read straight into a buffer of its own, lent from a small pool
 * (payload-pool.ts) and handed out with a `release` that gives it back once the consumer is done —
 * so a long stream of 1 MiB frames reuses a few buffers instead of leaving one per frame to the GC,
 * with no copy beyond the one from the socket's chunk.
 */
import {
	BINARY_FRAME_HEADER_BYTES,
	BINARY_FRAME_MARKER,
	type BinaryChannel,
	binaryChannelOf,
} from './binary-frame.js'
import { FRAME_HEADER_BYTES, FrameError, frameTooLargeMessage } from './frame.js'
import {
	type JsonShape,
	JsonShapeError,
	type JsonShapeLimits,
	JsonShapeScanner,
} from './json-shape.js'
import { type LentPayload, PayloadPool } from './payload-pool.js'
import { AGENT_REFUSAL, formatRefusal } from './refusals.js'

export type FrameItem =
	/** A JSON frame; `shape` is what the bounded scan found, when the reader scans (`json`). */
	| { readonly kind: 'frame'; readonly payload: Buffer; readonly shape?: JsonShape }
	/**
	 * A binary frame (binary-frame.ts): its channel and raw bytes. `release`, when the consumer is
	 * done with `payload` for good, lets the reader fill that buffer again with a later frame; a
	 * consumer that never calls it keeps bytes nothing will overwrite.
	 */
	| {
			readonly kind: 'binary'
			readonly channel: BinaryChannel
			readonly payload: Buffer
			readonly release: () => void
	  }
	| { readonly kind: 'end' }

export interface FrameReaderOptions {
	/** Largest payload a header may announce (binary frames included). */
	readonly maxFrameBytes: number
	/** The setting that governs the limit, named in `frame_too_large` refusals. */
	readonly limitVariable: string
	/** Whether binary frames are accepted from the start (otherwise only after `allowBinary`). */
	readonly binary?: boolean
	/**
	 * Bounds every JSON frame's payload as its bytes arrive (json-shape.ts): the first byte past a
	 * bound throws, before the rest of the frame is read or any of it parsed.
	 */
	readonly json?: JsonShapeLimits
	/** Where large binary payloads go instead of a lent buffer, when the consumer says. */
	readonly place?: BinaryPlacement
}

/**
 * Asked when a large binary frame starts: `offset` is where its payload begins among all binary
 * payload bytes of `channel` on this connection. Answers a buffer of exactly `length` bytes that
 * the payload is read into (the consumer's own, e.g. its slice of a whole file), or undefined for
 * a lent buffer. Such a payload is not lent: its release does nothing.
 */
export type BinaryPlacement = (
	channel: BinaryChannel,
	offset: number,
	length: number,
) => Buffer | undefined

const INITIAL_CAPACITY = 64 * 1024
/** Binary payloads from this size on are read into a lent buffer of their own. */
export const LENT_PAYLOAD_MIN_BYTES = 64 * 1024
const NOTHING_TO_RELEASE = (): void => {}
const EMPTY_CHUNK = Buffer.alloc(0)

/** A large binary frame being read straight into its own buffer. */
interface PendingPayload {
	readonly channel: BinaryChannel
	readonly lent: LentPayload
	filled: number
}

/** After a large binary frame, the next read takes only a header, so its payload can go direct. */
const HEADER_READ_BYTES = BINARY_FRAME_HEADER_BYTES

function isHexDigit(byte: number): boolean {
	return (
		(byte >= 0x30 && byte <= 0x39) ||
		(byte >= 0x61 && byte <= 0x66) ||
		(byte >= 0x41 && byte <= 0x46)
	)
}

/**
 * Incremental frame parser. Accumulates into ONE buffer grown geometrically, so a large frame
 * costs O(n) copying rather than re-concatenating every chunk. Throws `FrameError` as soon as the
 * bytes seen prove the framing broken: a non-hex byte in the first eight, or a ninth that is not
 * a newline, or an announced length above the limit.
 */
export class FrameReader {
	#buffer: Buffer = Buffer.allocUnsafe(0)
	#start = 0
	#end = 0
	#maxFrameBytes: number
	#limitVariable: string
	/** Whether payload views into `#buffer` exist, so it must not be reused. */
	#handedOut = false
	#binary: boolean
	#pending: PendingPayload | undefined
	readonly #pool = new PayloadPool()
	readonly #json: JsonShapeLimits | undefined
	readonly #place: BinaryPlacement | undefined
	/** Binary payload bytes announced so far, per channel (a placement's offsets). */
	readonly #binaryOffsets = new Map<BinaryChannel, number>()
	/** Whether the last item was a large binary frame (the next read may be header-sized). */
	#afterLargePayload = false
	#headerTarget: Buffer | undefined
	/** The scan of the JSON frame at `#start`, while its payload is still arriving. */
	#scan: JsonShapeScanner | undefined

	constructor(options: FrameReaderOptions) {
		this.#maxFrameBytes = options.maxFrameBytes
		this.#limitVariable = options.limitVariable
		this.#binary = options.binary ?? false
		this.#json = options.json
		this.#place = options.place
	}

	/** From now on binary frames are accepted (the connection negotiated them). */
	allowBinary(): void {
		this.#binary = true
	}

	/** Changes the ceiling for frames not yet started (e.g. once a connection authenticates). */
	setLimit(maxFrameBytes: number, limitVariable: string): void {
		this.#maxFrameBytes = maxFrameBytes
		this.#limitVariable = limitVariable
	}

	get maxFrameBytes(): number {
		return this.#maxFrameBytes
	}

	/** Bytes received and not yet handed out as frames. */
	get bufferedBytes(): number {
		return this.#end - this.#start + (this.#pending?.filled ?? 0)
	}

	/** The pool large binary payloads are lent from (its counters, for tests). */
	get payloadPool(): PayloadPool {
		return this.#pool
	}

	/**
	 * Appends `chunk` and answers the frames it completes, at most `maxItems` of them (the rest stay
	 * buffered for the next call, so a caller can change what it accepts between two frames).
	 */
	push(chunk: Buffer, maxItems = Number.POSITIVE_INFINITY): FrameItem[] {
		const rest = this.#pending ? this.#fill(chunk) : chunk
		if (rest.length > 0) this.#append(rest)
		return this.#drain(maxItems)
	}

	/**
	 * Where the next socket read should land to skip a copy, or undefined for anywhere (then
	 * `push` the bytes): the unfilled rest of a large payload being read, or, right after one, a
	 * header-sized buffer (so the following payload's bytes are not read ahead of its header).
	 */
	readTarget(): Buffer | undefined {
		const pending = this.#pending
		if (pending) {
			const rest = pending.lent.payload.length - pending.filled
			return rest > 0 ? pending.lent.payload.subarray(pending.filled) : undefined
		}
		if (!this.#afterLargePayload || this.#end > this.#start) return undefined
		this.#headerTarget ??= Buffer.allocUnsafe(HEADER_READ_BYTES)
		return this.#headerTarget
	}

	/** `byteCount` bytes were read into the buffer `readTarget()` last answered; as `push`. */
	pushRead(target: Buffer, byteCount: number): FrameItem[] {
		const pending = this.#pending
		const into = pending?.lent.payload
		if (
			pending &&
			into &&
			target.buffer === into.buffer &&
			target.byteOffset === into.byteOffset + pending.filled
		) {
			pending.filled += byteCount
			return this.#drain(Number.POSITIVE_INFINITY)
		}
		return this.push(target.subarray(0, byteCount))
	}

	#drain(maxItems: number): FrameItem[] {
		const items: FrameItem[] = []
		while (items.length < maxItems) {
			const item = this.#next()
			if (item === undefined) break
			items.push(item)
		}
		if (this.#handedOut) this.#detach()
		else if (this.#start === this.#end) {
			this.#start = 0
			this.#end = 0
		}
		return items
	}

	/** The next complete item, or undefined when more bytes are needed. */
	#next(): FrameItem | undefined {
		// A pending payload precedes every byte in the buffer (they are only appended once it is full).
		if (this.#pending) return this.#completed()
		const available = this.#end - this.#start
		const headerBytes = Math.min(available, FRAME_HEADER_BYTES)
		for (let i = 0; i < Math.min(headerBytes, 8); i++) {
			const byte = this.#buffer[this.#start + i] ?? 0
			if (!isHexDigit(byte)) {
				throw new FrameError(
					'bad_header',
					formatRefusal(AGENT_REFUSAL.bad_frame_header, 'length prefix is not 8 hex digits'),
				)
			}
		}
		if (available < FRAME_HEADER_BYTES) return undefined
		const marker = this.#buffer[this.#start + 8]
		const binary = marker === BINARY_FRAME_MARKER
		this.#afterLargePayload = false
		if (binary && !this.#binary) {
			// Refused at the header: not one byte of an unnegotiated payload is held.
			throw new FrameError(
				AGENT_REFUSAL.binary_frame_not_negotiated,
				formatRefusal(
					AGENT_REFUSAL.binary_frame_not_negotiated,
					'a binary frame on a connection whose open request did not ask for binary frames',
				),
			)
		}
		if (!binary && marker !== 0x0a) {
			throw new FrameError(
				'bad_header',
				formatRefusal(AGENT_REFUSAL.bad_frame_header, 'no newline after 8 hex digits'),
			)
		}
		const length = Number.parseInt(
			this.#buffer.toString('latin1', this.#start, this.#start + 8),
			16,
		)
		if (length > this.#maxFrameBytes) {
			throw new FrameError(
				AGENT_REFUSAL.frame_too_large,
				frameTooLargeMessage(length, this.#maxFrameBytes, this.#limitVariable),
				{
					announcedBytes: length,
					limitBytes: this.#maxFrameBytes,
					limitVariable: this.#limitVariable,
				},
			)
		}
		if (binary) return this.#binaryItem(available, length)
		if (length === 0) {
			this.#start += FRAME_HEADER_BYTES
			return { kind: 'end' }
		}
		const shape = this.#scanPayload(Math.min(available - FRAME_HEADER_BYTES, length), length)
		if (available < FRAME_HEADER_BYTES + length) {
			this.#reserve(FRAME_HEADER_BYTES + length)
			return undefined
		}
		const payload = this.#handOut(FRAME_HEADER_BYTES, length)
		return shape ? { kind: 'frame', payload, shape } : { kind: 'frame', payload }
	}

	/**
	 * Feeds the scan what arrived of the JSON frame at `#start` since the last call (`have` of its
	 * `length` payload bytes are buffered); its verdict once all are. Nothing without `json`.
	 */
	#scanPayload(have: number, length: number): JsonShape | undefined {
		const limits = this.#json
		if (!limits) return undefined
		const scan = this.#scan ?? new JsonShapeScanner(limits)
		this.#scan = scan
		const from = this.#start + FRAME_HEADER_BYTES
		try {
			if (have > scan.scanned) scan.feed(this.#buffer.subarray(from + scan.scanned, from + have))
			if (have < length) return undefined
			this.#scan = undefined
			return scan.finish()
		} catch (error) {
			if (!(error instanceof JsonShapeError)) throw error
			throw new FrameError('json_shape', `frame refused before parsing: ${error.message}`, {
				cause: error,
			})
		}
	}

	#binaryItem(available: number, length: number): FrameItem | undefined {
		if (available < BINARY_FRAME_HEADER_BYTES) return undefined
		const byte = this.#buffer[this.#start + FRAME_HEADER_BYTES] ?? 0
		const channel = binaryChannelOf(byte)
		if (channel === undefined) {
			throw new FrameError(
				'bad_header',
				formatRefusal(
					AGENT_REFUSAL.bad_frame_header,
					`binary frame channel byte 0x${byte.toString(16).padStart(2, '0')} names no channel`,
				),
			)
		}
		if (available < BINARY_FRAME_HEADER_BYTES + length) {
			if (length >= LENT_PAYLOAD_MIN_BYTES) {
				this.#startPending(channel, this.#advanceOffset(channel, length), length)
				return undefined
			}
			this.#reserve(BINARY_FRAME_HEADER_BYTES + length)
			return undefined
		}
		this.#advanceOffset(channel, length)
		return {
			kind: 'binary',
			channel,
			payload: this.#handOut(BINARY_FRAME_HEADER_BYTES, length),
			release: NOTHING_TO_RELEASE,
		}
	}

	/** Counts a binary frame's payload into its channel's offsets; answers where it begins. */
	#advanceOffset(channel: BinaryChannel, length: number): number {
		const offset = this.#binaryOffsets.get(channel) ?? 0
		this.#binaryOffsets.set(channel, offset + length)
		return offset
	}

	/**
	 * Moves a large binary frame's payload bytes already buffered (everything behind its header:
	 * the frame is not complete) into its own buffer — the consumer's placement, else a lent one;
	 * later chunks go there first (`#fill`).
	 */
	#startPending(channel: BinaryChannel, offset: number, length: number): void {
		const placed = this.#place?.(channel, offset, length)
		const lent =
			placed?.length === length
				? { payload: placed, release: NOTHING_TO_RELEASE }
				: this.#pool.lend(length)
		const from = this.#start + BINARY_FRAME_HEADER_BYTES
		const filled = this.#buffer.copy(lent.payload, 0, from, this.#end)
		this.#pending = { channel, lent, filled }
		this.#start = 0
		this.#end = 0
	}

	/** Copies what the pending payload still lacks out of `chunk`; answers the bytes behind it. */
	#fill(chunk: Buffer): Buffer {
		const pending = this.#pending
		if (!pending) return chunk
		const want = pending.lent.payload.length - pending.filled
		const take = Math.min(want, chunk.length)
		chunk.copy(pending.lent.payload, pending.filled, 0, take)
		pending.filled += take
		return take === chunk.length ? EMPTY_CHUNK : chunk.subarray(take)
	}

	/** The pending payload as an item once full (its buffer is the consumer's until released). */
	#completed(): FrameItem | undefined {
		const pending = this.#pending
		if (!pending || pending.filled < pending.lent.payload.length) return undefined
		this.#pending = undefined
		this.#afterLargePayload = true
		const { payload, release } = pending.lent
		return { kind: 'binary', channel: pending.channel, payload, release }
	}

	/** The payload after a header of `headerBytes`, as a view (see #detach); consumes the frame. */
	#handOut(headerBytes: number, length: number): Buffer {
		const from = this.#start + headerBytes
		// Handed out as a view, not copied: the buffer is then never written again (see #detach).
		const payload = this.#buffer.subarray(from, from + length)
		this.#handedOut = true
		this.#start = from + length
		return payload
	}

	/** Moves unread bytes to a fresh buffer, leaving the old one to the payload views handed out. */
	#detach(): void {
		const rest = this.#end - this.#start
		const next = Buffer.allocUnsafe(Math.max(rest, INITIAL_CAPACITY))
		this.#buffer.copy(next, 0, this.#start, this.#end)
		this.#buffer = next
		this.#start = 0
		this.#end = rest
		this.#handedOut = false
	}

	#append(chunk: Buffer): void {
		this.#reserve(this.#end - this.#start + chunk.length)
		chunk.copy(this.#buffer, this.#end)
		this.#end += chunk.length
	}

	/** Ensures room for `needed` bytes from `#start`, compacting or doubling as required. */
	#reserve(needed: number): void {
		if (this.#start + needed <= this.#buffer.length) return
		const used = this.#end - this.#start
		// Compacting in place would overwrite payload views handed out from this buffer.
		if (!this.#handedOut && needed <= this.#buffer.length && this.#start > 0) {
			this.#buffer.copy(this.#buffer, 0, this.#start, this.#end)
			this.#start = 0
			this.#end = used
			return
		}
		// Geometric growth for unknown sizes; exact when the header already told us the frame size.
		// (After a hand-out the old buffer belongs to its views: start small rather than doubling it.)
		const doubled = this.#handedOut ? 0 : this.#buffer.length * 2
		const capacity = Math.max(needed, doubled, INITIAL_CAPACITY)
		const next = Buffer.allocUnsafe(capacity)
		this.#buffer.copy(next, 0, this.#start, this.#end)
		this.#buffer = next
		this.#start = 0
		this.#end = used
		this.#handedOut = false
	}
}
