/**
 * The frame codec shared by the guest agent and the host: 8 hex digits of payload length, `\n`,
 * then that many bytes of UTF-8 JSON. The zero-length frame ends a stream.
 */

import { isAscii } from 'node:buffer'
import { isRecord } from '../common/is-record.js'
import { asciiMemberBytes, defineLazyAsciiMember } from './ascii-string-members.js'
import { base64Length, writeBase64 } from './base64-pieces.js'
import { type ByteSpan, type JsonShape, scanJsonShape, UNBOUNDED_JSON_SHAPE } from './json-shape.js'
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
	/** A JSON payload past the reader's `json` bounds (a host reading a guest; never sent). */
	| 'json_shape'
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
	/** The wire code (`frame_too_large`, `bad_header`, `binary_frame_not_negotiated`, `json_shape`). */
	readonly code: FrameErrorCode
	readonly announcedBytes?: number
	readonly limitBytes?: number
	readonly limitVariable?: string

	constructor(
		code: FrameErrorCode,
		message: string,
		details: {
			announcedBytes?: number
			limitBytes?: number
			limitVariable?: string
			cause?: unknown
		} = {},
	) {
		super(message, details.cause === undefined ? undefined : { cause: details.cause })
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

/**
 * Stands in for the bulk string while the rest is parsed: a string no JSON text of a peer contains
 * by chance (NULs and a per-process nonce), written as its own JSON escapes.
 */
const BULK_MARKER = `\u0000namzu-bulk-${Math.random().toString(36).slice(2)}\u0000`
const BULK_MARKER_JSON = JSON.stringify(BULK_MARKER).slice(1, -1)

/** Where the marker landed: the one object member holding it, if exactly one does. */
function findMarker(value: unknown): { holder: Record<string, unknown>; key: string } | undefined {
	let found: { holder: Record<string, unknown>; key: string } | undefined
	let count = 0
	const visit = (node: unknown): void => {
		if (node === null || typeof node !== 'object') return
		if (Array.isArray(node)) {
			for (const item of node) {
				if (item === BULK_MARKER) count++
				else visit(item)
			}
			return
		}
		const record = node as Record<string, unknown>
		for (const key of Object.keys(record)) {
			const member = record[key]
			if (member === BULK_MARKER) {
				count++
				found = { holder: record, key }
			} else visit(member)
		}
	}
	visit(value)
	return count === 1 ? found : undefined
}

/**
 * A payload whose scan found a bulk string (json-shape.ts): the rest is parsed with a marker in
 * its place, then the member is redefined over the original bytes, never built unless read. The
 * bulk as an array item or a key (no bulk consumer sends either) is parsed plainly.
 */
function parseWithBulk(payload: Buffer, bulk: ByteSpan): Record<string, unknown> | undefined {
	const text = `${payload.toString('utf8', 0, bulk.start)}${BULK_MARKER_JSON}${payload.toString('utf8', bulk.end)}`
	const value: unknown = JSON.parse(text)
	if (!isRecord(value)) throw new TypeError('frame payload is not a JSON object')
	const place = findMarker(value)
	if (!place) return undefined
	defineLazyAsciiMember(place.holder, place.key, payload.subarray(bulk.start, bulk.end))
	return value
}

/**
 * Parses a frame payload as a JSON object; throws `SyntaxError`/`TypeError` on anything else, and
 * `JsonShapeError` for a payload past `UNBOUNDED_JSON_SHAPE`'s nesting. `shape` is what a bounded
 * scan of the payload found as it arrived (frame-reader.ts); without it the payload is scanned now.
 */
export function parseFramePayload(payload: Buffer, shape?: JsonShape): Record<string, unknown> {
	const data = parseDataEvent(payload)
	if (data) return data
	const { bulk } = shape ?? scanJsonShape(payload, UNBOUNDED_JSON_SHAPE)
	const lazy = bulk ? parseWithBulk(payload, bulk) : undefined
	if (lazy) return lazy
	const value: unknown = JSON.parse(payload.toString('utf8'))
	if (!isRecord(value)) throw new TypeError('frame payload is not a JSON object')
	return value
}
