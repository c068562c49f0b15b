/**
 * Where an HTTP/1.x request's body ends, read incrementally: the proxy forwards exactly one request
 * per tunnel, so it must know the last byte of the first one without trusting the upstream to stop
 * reading after `Connection: close`. Pure; the stream around it is `first-request-only.ts`.
 * Ambiguous framing (both `Content-Length` and `Transfer-Encoding`, a coding other than `chunked`,
 * differing lengths, `Transfer-Encoding` in HTTP/1.0, which RFC 9112 §6.1 calls faulty) is refused,
 * never guessed: it is how requests are smuggled.
 */
import { headerValues, type RequestHead } from './request-head.js'

const MAX_CHUNK_LINE_BYTES = 1024
const MAX_TRAILER_BYTES = 8 * 1024
const DIGITS = /^[0-9]{1,15}$/
const CHUNK_LINE = /^([0-9A-Fa-f]{1,12})(;[\t\x20-\x7e]*)?$/

export type BodyFraming =
	| { readonly kind: 'length'; readonly remaining: number }
	| {
			readonly kind: 'chunked'
			/** `size`: reading a chunk-size line; `data`: inside a chunk; `data-end`: its CRLF;
			 * `trailer`: after the last chunk, until the empty line. */
			readonly phase: 'size' | 'data' | 'data-end' | 'trailer'
			readonly remaining: number
			/** The partial line carried between calls (size or trailer lines). */
			readonly line: string
			readonly trailerBytes: number
	  }
	| { readonly kind: 'done' }

export type FramingRead =
	| { readonly kind: 'invalid'; readonly reason: string }
	| { readonly kind: 'framing'; readonly framing: BodyFraming }

export type BodyAdvance =
	| { readonly kind: 'invalid'; readonly reason: string }
	| {
			readonly kind: 'advanced'
			readonly framing: BodyFraming
			/** Bytes of the input that belong to the body (a prefix of it). */
			readonly consumed: number
	  }

/** The framing a request head announces. A request with neither field has no body. */
export function bodyFramingOf(head: RequestHead): FramingRead {
	const codings = headerValues(head, 'transfer-encoding')
	const lengths = headerValues(head, 'content-length')
	if (codings.length > 0) {
		if (lengths.length > 0) return invalid('both Content-Length and Transfer-Encoding')
		if (head.version === 'HTTP/1.0') return invalid('Transfer-Encoding in HTTP/1.0')
		const list = codings.flatMap((value) => value.split(',').map((part) => part.trim()))
		if (list.length !== 1 || list[0]?.toLowerCase() !== 'chunked') {
			return invalid('a transfer coding other than chunked')
		}
		return {
			kind: 'framing',
			framing: { kind: 'chunked', phase: 'size', remaining: 0, line: '', trailerBytes: 0 },
		}
	}
	if (lengths.length === 0) return { kind: 'framing', framing: { kind: 'done' } }
	const values = new Set(lengths.flatMap((value) => value.split(',').map((part) => part.trim())))
	const [only] = values
	if (values.size !== 1 || only === undefined || !DIGITS.test(only)) {
		return invalid('a malformed Content-Length')
	}
	const remaining = Number(only)
	return {
		kind: 'framing',
		framing: remaining === 0 ? { kind: 'done' } : { kind: 'length', remaining },
	}
}

/** Consumes what of `bytes` belongs to the body; `framing.kind === 'done'` once it ended. */
export function advanceBody(framing: BodyFraming, bytes: Buffer): BodyAdvance {
	if (framing.kind === 'done') return { kind: 'advanced', framing, consumed: 0 }
	if (framing.kind === 'length') {
		const consumed = Math.min(framing.remaining, bytes.length)
		const remaining = framing.remaining - consumed
		return {
			kind: 'advanced',
			framing: remaining === 0 ? { kind: 'done' } : { kind: 'length', remaining },
			consumed,
		}
	}
	let state = framing
	let offset = 0
	while (offset < bytes.length) {
		if (state.phase === 'data') {
			const take = Math.min(state.remaining, bytes.length - offset)
			offset += take
			const remaining = state.remaining - take
			state = { ...state, remaining, phase: remaining === 0 ? 'data-end' : 'data' }
			continue
		}
		// Line phases: accumulate up to CRLF.
		const newline = bytes.indexOf(0x0a, offset)
		const end = newline < 0 ? bytes.length : newline + 1
		const line = state.line + bytes.subarray(offset, end).toString('latin1')
		offset = end
		const limit = state.phase === 'trailer' ? MAX_TRAILER_BYTES - state.trailerBytes : 0
		if (newline < 0) {
			if (state.phase === 'trailer' ? line.length > limit : line.length > MAX_CHUNK_LINE_BYTES) {
				return invalid('a chunk-size or trailer line too long')
			}
			state = { ...state, line }
			continue
		}
		if (!line.endsWith('\r\n')) return invalid('a bare LF in the chunked framing')
		const text = line.slice(0, -2)
		if (state.phase === 'data-end') {
			if (text !== '') return invalid('chunk data longer than its size')
			state = { ...state, phase: 'size', line: '' }
			continue
		}
		if (state.phase === 'size') {
			const match = CHUNK_LINE.exec(text)
			if (!match?.[1]) return invalid('a malformed chunk-size line')
			const size = Number.parseInt(match[1], 16)
			state =
				size === 0
					? { ...state, phase: 'trailer', line: '', remaining: 0 }
					: { ...state, phase: 'data', line: '', remaining: size }
			continue
		}
		// Trailer: an empty line ends the body.
		if (text === '') return { kind: 'advanced', framing: { kind: 'done' }, consumed: offset }
		const trailerBytes = state.trailerBytes + line.length
		if (trailerBytes > MAX_TRAILER_BYTES) return invalid('trailer fields too long')
		state = { ...state, line: '', trailerBytes }
	}
	return { kind: 'advanced', framing: state, consumed: offset }
}

function invalid(reason: string): { readonly kind: 'invalid'; readonly reason: string } {
	return { kind: 'invalid', reason }
}
