/**
 * The frame codec shared by the guest agent and the host: 8 hex digits of payload length, `\n`,
 * then that many bytes of UTF-8 JSON. The zero-length frame ends a stream.
 */

import { isAscii } from 'node:buffer'
import { asciiMemberBytes, defineLazyAsciiMember } from './ascii-string-members.js'
import { base64Length, writeBase64 } from './base64-pieces.js'
import {
	BINARY_FRAME_HEADER_BYTES,
	BINARY_FRAME_MARKER,
	type BinaryChannel,
	binaryChannelOf,
} from './binary-frame.js'
import { isRecord } from './is-record.js'
import { AGENT_REFUSAL, formatRefusal } from './refusals.js'

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
	const frame = Buffer.allocUnsafe(base64DataFrameBytes(bytes.byteLength))
	encodeBase64DataFrameInto(frame, bytes)
	return frame
}

/** Wire size of the data frame carrying `byteLength` raw bytes. */
export function base64DataFrameBytes(byteLength: number): number {
	return (
		FRAME_HEADER_BYTES +
		DATA_EVENT_PREFIX.length +
		base64Length(byteLength) +
		DATA_EVENT_SUFFIX.length
	)
}

/**
 * `encodeBase64DataFrame` into a caller's buffer (at least `base64DataFrameBytes` long), so a bulk
 * sender can recycle frame buffers; returns the frame as a view of `target`.
 */
export function encodeBase64DataFrameInto(target: Buffer, bytes: Uint8Array): Buffer {
	const frameBytes = base64DataFrameBytes(bytes.byteLength)
	if (target.length < frameBytes) throw new RangeError('target buffer is too small for the frame')
	const payloadBytes = frameBytes - FRAME_HEADER_BYTES
	target.write(`${payloadBytes.toString(16).padStart(8, '0')}\n`, 0, 'latin1')
	DATA_EVENT_PREFIX.copy(target, FRAME_HEADER_BYTES)
	writeBase64(target, FRAME_HEADER_BYTES + DATA_EVENT_PREFIX.length, bytes)
	DATA_EVENT_SUFFIX.copy(target, frameBytes - DATA_EVENT_SUFFIX.length)
	return target.subarray(0, frameBytes)
}

/** The ASCII bytes of a parsed data event's `data`, when the fast parse kept them. */
export function dataEventTextBytes(event: object): Buffer | undefined {
	return asciiMemberBytes(event, 'data')
}

/**
 * Bytes that travel as a base64 JSON string. `encodeFrameWithBase64` writes them straight into the
 * frame, so the (possibly 85 MiB) base64 string is never built. Plain JSON.stringify does not know
 * this type: it is only for messages encoded by those two functions.
 */
export class Base64Bytes {
	readonly #bytes: Uint8Array

	constructor(bytes: Uint8Array) {
		this.#bytes = bytes
	}

	get bytes(): Uint8Array {
		return this.#bytes
	}

	get base64Length(): number {
		return base64Length(this.#bytes.byteLength)
	}
}

const BASE64_PLACEHOLDER = '\u0000namzu:base64\u0000'
const QUOTED_BASE64_PLACEHOLDER = JSON.stringify(BASE64_PLACEHOLDER)

/** JSON of `message` with its one `Base64Bytes` (if any) replaced by a placeholder string. */
function stringifyWithPlaceholder(message: unknown): { json: string; bytes?: Base64Bytes } {
	let found: Base64Bytes | undefined
	const json = JSON.stringify(message, (_key: string, value: unknown) => {
		if (value instanceof Base64Bytes) {
			if (found) throw new TypeError('a frame carries at most one Base64Bytes value')
			found = value
			return BASE64_PLACEHOLDER
		}
		return value
	})
	return found ? { json, bytes: found } : { json }
}

/** `encodeFrame`, except that a `Base64Bytes` member is written as its base64 string. */
export function encodeFrameWithBase64(message: unknown): Buffer {
	const { json, bytes } = stringifyWithPlaceholder(message)
	if (!bytes) return encodeFramePayload(Buffer.from(json, 'utf8'))
	const at = json.indexOf(QUOTED_BASE64_PLACEHOLDER)
	const head = Buffer.from(json.slice(0, at + 1), 'utf8')
	const tail = Buffer.from(json.slice(at + QUOTED_BASE64_PLACEHOLDER.length - 1), 'utf8')
	const payloadBytes = head.length + bytes.base64Length + tail.length
	const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + payloadBytes)
	frame.write(`${payloadBytes.toString(16).padStart(8, '0')}\n`, 0, 'latin1')
	head.copy(frame, FRAME_HEADER_BYTES)
	writeBase64(frame, FRAME_HEADER_BYTES + head.length, bytes.bytes)
	tail.copy(frame, frame.length - tail.length)
	return frame
}

/** Bytes a frame carrying `message` occupies on the wire, header included (`Base64Bytes` aware). */
export function encodedFrameBytes(message: unknown): number {
	const { json, bytes } = stringifyWithPlaceholder(message)
	const placeholder = bytes ? QUOTED_BASE64_PLACEHOLDER.length - 2 - bytes.base64Length : 0
	return FRAME_HEADER_BYTES + Buffer.byteLength(json, 'utf8') - placeholder
}

export type FrameErrorCode =
	| 'bad_header'
	| typeof AGENT_REFUSAL.frame_too_large
	| typeof AGENT_REFUSAL.binary_frame_not_negotiated

/**
 * The peer broke the framing. `message` is the refusal the agent sends back verbatim. The wire
 * imports nothing, so this is not a `SandboxError`: it never reaches a caller — the agent answers
 * it as a refusal and the host wraps it as the cause of a `RemoteProtocolError`
 * (`host/transport/frame-channel.ts`).
 */
export class FrameError extends Error {
	override readonly name = 'FrameError'
	/** The wire code (`frame_too_large`, `bad_header`, `binary_frame_not_negotiated`). */
	readonly code: FrameErrorCode
	readonly announcedBytes?: number
	readonly limitBytes?: number
	readonly limitVariable?: string

	constructor(
		code: FrameErrorCode,
		message: string,
		details: { announcedBytes?: number; limitBytes?: number; limitVariable?: string } = {},
	) {
		super(message)
		this.code = code
		if (details.announcedBytes !== undefined) this.announcedBytes = details.announcedBytes
		if (details.limitBytes !== undefined) this.limitBytes = details.limitBytes
		if (details.limitVariable !== undefined) this.limitVariable = details.limitVariable
	}
}

export function frameTooLargeMessage(announced: number, limit: number, variable: string): string {
	return formatRefusal(
		AGENT_REFUSAL.frame_too_large,
		`announced ${announced} bytes, limit ${limit} (${variable})`,
	)
}

export type FrameItem =
	| { readonly kind: 'frame'; readonly payload: Buffer }
	/** A binary frame (binary-frame.ts): its channel and raw bytes. */
	| { readonly kind: 'binary'; readonly channel: BinaryChannel; readonly payload: Buffer }
	| { readonly kind: 'end' }

export interface FrameReaderOptions {
	/** Largest payload a header may announce (binary frames included). */
	readonly maxFrameBytes: number
	/** The setting that governs the limit, named in `frame_too_large` refusals. */
	readonly limitVariable: string
	/** Whether binary frames are accepted from the start (otherwise only after `allowBinary`). */
	readonly binary?: boolean
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
	#binary: boolean

	constructor(options: FrameReaderOptions) {
		this.#maxFrameBytes = options.maxFrameBytes
		this.#limitVariable = options.limitVariable
		this.#binary = options.binary ?? false
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
		return this.#end - this.#start
	}

	/**
	 * Appends `chunk` and answers the frames it completes, at most `maxItems` of them (the rest stay
	 * buffered for the next call, so a caller can change what it accepts between two frames).
	 */
	push(chunk: Buffer, maxItems = Number.POSITIVE_INFINITY): FrameItem[] {
		if (chunk.length > 0) this.#append(chunk)
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
		if (available < FRAME_HEADER_BYTES + length) {
			this.#reserve(FRAME_HEADER_BYTES + length)
			return undefined
		}
		return { kind: 'frame', payload: this.#handOut(FRAME_HEADER_BYTES, length) }
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
			this.#reserve(BINARY_FRAME_HEADER_BYTES + length)
			return undefined
		}
		return { kind: 'binary', channel, payload: this.#handOut(BINARY_FRAME_HEADER_BYTES, length) }
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
	// ASCII (all base64, most terminal output): keep the bytes, build the string only if read.
	const event: Record<string, unknown> = { type: 'data' }
	defineLazyAsciiMember(event, 'data', text)
	return event
}

/** Below this a payload is parsed plainly: the fast path only pays off for bulk bodies. */
const TRAILING_STRING_MIN_BYTES = 1024 * 1024

/**
 * A payload ending `…"key":"<long ASCII string>"}}` (closing braces only) is parsed with that string
 * emptied, then the member is redefined over the original bytes. Anything not exactly that shape
 * (an escape, a quote, non-ASCII, an array on the way) falls back to JSON.parse.
 */
function parseWithTrailingString(payload: Buffer): Record<string, unknown> | undefined {
	if (payload.length < TRAILING_STRING_MIN_BYTES) return undefined
	let closing = payload.length - 1
	while (closing > 0 && payload[closing] === 0x7d) closing--
	const depth = payload.length - 1 - closing
	if (depth === 0 || payload[closing] !== 0x22) return undefined
	const open = payload.lastIndexOf(0x22, closing - 1)
	if (open < 2 || payload[open - 1] !== 0x3a || payload[open - 2] !== 0x22) return undefined
	const text = payload.subarray(open + 1, closing)
	if (text.length < TRAILING_STRING_MIN_BYTES / 2 || text.indexOf(0x5c) !== -1 || !isAscii(text)) {
		return undefined
	}
	const keyOpen = payload.lastIndexOf(0x22, open - 3)
	if (keyOpen < 0) return undefined
	const key: unknown = JSON.parse(payload.toString('utf8', keyOpen, open - 1))
	const rest = `${payload.toString('utf8', 0, open + 1)}"${'}'.repeat(depth)}`
	const value: unknown = JSON.parse(rest)
	// Walk to the object that holds the member: the last member at each level, `depth` levels deep.
	let holder: unknown = value
	for (let level = 1; level < depth; level++) {
		if (holder === null || typeof holder !== 'object' || Array.isArray(holder)) return undefined
		const keys = Object.keys(holder)
		const last = keys[keys.length - 1]
		holder = last === undefined ? undefined : (holder as Record<string, unknown>)[last]
	}
	if (
		typeof key !== 'string' ||
		holder === null ||
		typeof holder !== 'object' ||
		Array.isArray(holder)
	) {
		return undefined
	}
	const record = holder as Record<string, unknown>
	const keys = Object.keys(record)
	if (keys[keys.length - 1] !== key || record[key] !== '') return undefined
	defineLazyAsciiMember(record, key, text)
	return value as Record<string, unknown>
}

/** The trailing-string fast path, where any surprise means "parse it plainly". */
function parseBulkSafely(payload: Buffer): Record<string, unknown> | undefined {
	try {
		return parseWithTrailingString(payload)
	} catch {
		return undefined
	}
}

/** Parses a frame payload as a JSON object; throws `SyntaxError`/`TypeError` on anything else. */
export function parseFramePayload(payload: Buffer): Record<string, unknown> {
	const fast = parseDataEvent(payload) ?? parseBulkSafely(payload)
	if (fast) return fast
	const value: unknown = JSON.parse(payload.toString('utf8'))
	if (!isRecord(value)) throw new TypeError('frame payload is not a JSON object')
	return value
}
