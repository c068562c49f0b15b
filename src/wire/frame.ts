/**
 * The frame codec shared by the guest agent and the host: 8 hex digits of payload length, `\n`,
 * then that many bytes of UTF-8 JSON. The zero-length frame ends a stream.
 */

import { isAscii } from 'node:buffer'
import { base64Length, writeBase64 } from './base64-pieces.js'

export const FRAME_HEADER_BYTES = 9
/** Largest length the 8-hex header can express; the real ceiling is the reader's `maxFrameBytes`. */
export const MAX_ENCODABLE_FRAME_BYTES = 0xffffffff
export const STREAM_TERMINATOR: Buffer = Buffer.from('00000000\n', 'latin1')

export function encodeFrame(message: unknown): Buffer {
	return encodeFramePayload(Buffer.from(JSON.stringify(message), 'utf8'))
}

export function encodeFramePayload(payload: Buffer): Buffer {
	if (payload.length > MAX_ENCODABLE_FRAME_BYTES) {
		throw new RangeError(`frame payload of ${payload.length} bytes cannot be encoded`)
	}
	const header = Buffer.from(`${payload.length.toString(16).padStart(8, '0')}\n`, 'latin1')
	return Buffer.concat([header, payload], FRAME_HEADER_BYTES + payload.length)
}

const DATA_EVENT_PREFIX = Buffer.from('{"type":"data","data":"', 'latin1')
const DATA_EVENT_SUFFIX = Buffer.from('"}', 'latin1')

/**
 * The frame `encodeFrame({ type: 'data', data: <base64 of bytes> })` would produce, byte for byte,
 * built without JSON.stringify: base64 needs no escaping, and bulk file streams send thousands of
 * these, so skipping the scan and the UTF-8 transcoding matters.
 */
export function encodeBase64DataFrame(bytes: Uint8Array): Buffer {
	const payloadBytes =
		DATA_EVENT_PREFIX.length + base64Length(bytes.byteLength) + DATA_EVENT_SUFFIX.length
	const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + payloadBytes)
	frame.write(`${payloadBytes.toString(16).padStart(8, '0')}\n`, 0, 'latin1')
	DATA_EVENT_PREFIX.copy(frame, FRAME_HEADER_BYTES)
	writeBase64(frame, FRAME_HEADER_BYTES + DATA_EVENT_PREFIX.length, bytes)
	DATA_EVENT_SUFFIX.copy(frame, frame.length - DATA_EVENT_SUFFIX.length)
	return frame
}

/**
 * On a parsed `data` event whose string is ASCII: the string's bytes, so a bulk consumer can decode
 * base64 straight from them (`decodeBase64Into`) without the event ever building the string.
 */
export const DATA_EVENT_TEXT_BYTES: unique symbol = Symbol('namzu.dataEventTextBytes')

/** The ASCII bytes of a parsed data event's `data`, when the fast parse kept them. */
export function dataEventTextBytes(event: object): Buffer | undefined {
	const bytes: unknown = Reflect.get(event, DATA_EVENT_TEXT_BYTES)
	return Buffer.isBuffer(bytes) ? bytes : undefined
}

/** Bytes a frame carrying `message` occupies on the wire, header included. */
export function encodedFrameBytes(message: unknown): number {
	return FRAME_HEADER_BYTES + Buffer.byteLength(JSON.stringify(message), 'utf8')
}

export type FrameErrorReason = 'bad_header' | 'frame_too_large'

/** The peer broke the framing. `message` is the refusal the agent sends back verbatim. */
export class FrameError extends Error {
	override readonly name = 'FrameError'
	readonly reason: FrameErrorReason
	readonly announcedBytes?: number
	readonly limitBytes?: number
	readonly limitVariable?: string

	constructor(
		reason: FrameErrorReason,
		message: string,
		details: { announcedBytes?: number; limitBytes?: number; limitVariable?: string } = {},
	) {
		super(message)
		this.reason = reason
		if (details.announcedBytes !== undefined) this.announcedBytes = details.announcedBytes
		if (details.limitBytes !== undefined) this.limitBytes = details.limitBytes
		if (details.limitVariable !== undefined) this.limitVariable = details.limitVariable
	}
}

export function frameTooLargeMessage(announced: number, limit: number, variable: string): string {
	return `frame_too_large: announced ${announced} bytes, limit ${limit} (${variable})`
}

export type FrameItem =
	| { readonly kind: 'frame'; readonly payload: Buffer }
	| { readonly kind: 'end' }

export interface FrameReaderOptions {
	/** Largest payload a header may announce. */
	readonly maxFrameBytes: number
	/** The setting that governs the limit, named in `frame_too_large` refusals. */
	readonly limitVariable: string
}

const INITIAL_CAPACITY = 64 * 1024

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

	constructor(options: FrameReaderOptions) {
		this.#maxFrameBytes = options.maxFrameBytes
		this.#limitVariable = options.limitVariable
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
		return this.#end - this.#start
	}

	push(chunk: Buffer): FrameItem[] {
		this.#append(chunk)
		const items: FrameItem[] = []
		for (;;) {
			const available = this.#end - this.#start
			const headerBytes = Math.min(available, FRAME_HEADER_BYTES)
			for (let i = 0; i < Math.min(headerBytes, 8); i++) {
				const byte = this.#buffer[this.#start + i] ?? 0
				if (!isHexDigit(byte)) {
					throw new FrameError('bad_header', 'bad_frame_header: length prefix is not 8 hex digits')
				}
			}
			if (available < FRAME_HEADER_BYTES) break
			if (this.#buffer[this.#start + 8] !== 0x0a) {
				throw new FrameError('bad_header', 'bad_frame_header: no newline after 8 hex digits')
			}
			const length = Number.parseInt(
				this.#buffer.toString('latin1', this.#start, this.#start + 8),
				16,
			)
			if (length > this.#maxFrameBytes) {
				throw new FrameError(
					'frame_too_large',
					frameTooLargeMessage(length, this.#maxFrameBytes, this.#limitVariable),
					{
						announcedBytes: length,
						limitBytes: this.#maxFrameBytes,
						limitVariable: this.#limitVariable,
					},
				)
			}
			if (length === 0) {
				this.#start += FRAME_HEADER_BYTES
				items.push({ kind: 'end' })
				continue
			}
			if (available < FRAME_HEADER_BYTES + length) {
				this.#reserve(FRAME_HEADER_BYTES + length)
				break
			}
			const from = this.#start + FRAME_HEADER_BYTES
			// Handed out as a view, not copied: the buffer is then never written again (see #detach).
			const payload = this.#buffer.subarray(from, from + length)
			this.#handedOut = true
			this.#start = from + length
			items.push({ kind: 'frame', payload })
		}
		if (this.#handedOut) this.#detach()
		else if (this.#start === this.#end) {
			this.#start = 0
			this.#end = 0
		}
		return items
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

/**
 * A `{"type":"data","data":"…"}` payload whose string holds no quote or backslash (so no escape)
 * decodes to the same object JSON.parse would give, without parsing: the shape of every bulk chunk.
 * (The one leniency: a raw control character, which strict JSON forbids, is accepted as itself.)
 */
function parseDataEvent(payload: Buffer): Record<string, unknown> | undefined {
	const start = DATA_EVENT_PREFIX.length
	const end = payload.length - DATA_EVENT_SUFFIX.length
	if (end < start || payload.compare(DATA_EVENT_PREFIX, 0, start, 0, start) !== 0) return undefined
	if (payload[end] !== 0x22 || payload[end + 1] !== 0x7d) return undefined
	if (payload.indexOf(0x22, start) !== end || payload.indexOf(0x5c, start) !== -1) return undefined
	const text = payload.subarray(start, end)
	if (!isAscii(text)) return { type: 'data', data: text.toString('utf8') }
	// ASCII (all base64, most terminal output): keep the bytes, and build the string only if read.
	let data: string | undefined
	const event = { type: 'data' } as Record<string, unknown>
	Object.defineProperty(event, 'data', {
		enumerable: true,
		get: () => {
			data ??= text.toString('latin1')
			return data
		},
	})
	Object.defineProperty(event, DATA_EVENT_TEXT_BYTES, { value: text })
	return event
}

/** Parses a frame payload as a JSON object; throws `SyntaxError`/`TypeError` on anything else. */
export function parseFramePayload(payload: Buffer): Record<string, unknown> {
	const dataEvent = parseDataEvent(payload)
	if (dataEvent) return dataEvent
	const value: unknown = JSON.parse(payload.toString('utf8'))
	if (value === null || typeof value !== 'object' || Array.isArray(value)) {
		throw new TypeError('frame payload is not a JSON object')
	}
	return value as Record<string, unknown>
}
