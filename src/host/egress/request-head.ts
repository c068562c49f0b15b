/**
 * An HTTP/1.x request head (request line, header fields, the blank line) read strictly by RFC 9112
 * from the first bytes of a stream, incrementally: each byte is examined once however the bytes
 * are split, so a head trickled a byte at a time costs what it costs in one piece. The bridge's
 * CONNECT and RESOLVE requests and every request the proxy forwards are read with it. What a
 * lenient server would repair is refused instead, by name: a leading empty line, a bare LF or CR,
 * obsolete line folding, whitespace before a colon, a control character in a value, a method
 * with a lower-case letter, a version other than HTTP/1.0 or HTTP/1.1 (the HTTP/2 preface
 * `PRI * HTTP/2.0` among them). What the head means (its target, its Host) is
 * `forwarded-request.ts`'s.
 */

export interface RequestHead {
	readonly method: string
	readonly target: string
	readonly version: 'HTTP/1.0' | 'HTTP/1.1'
	/** In order, names as sent. */
	readonly headers: readonly (readonly [string, string])[]
	/** Bytes of the head, the blank line included; what follows is the body. */
	readonly length: number
}

/** Why a head was refused (kebab-case: it ends up in an `EgressDecision` reason). */
export type RequestHeadRefusal =
	| 'empty-line-first'
	| 'bare-lf'
	| 'bare-cr'
	| 'method-invalid'
	| 'request-line-invalid'
	| 'version-unsupported'
	| 'h2-preface'
	| 'obsolete-line-folding'
	| 'header-name-invalid'
	| 'header-value-invalid'
	| 'too-many-header-fields'
	| 'head-too-large'

export type RequestHeadRead =
	| { readonly kind: 'incomplete' }
	| { readonly kind: 'invalid'; readonly reason: RequestHeadRefusal }
	/** `rest`: the bytes of the last chunk after the head (the start of the body). */
	| { readonly kind: 'head'; readonly head: RequestHead; readonly rest: Buffer }

/** Upper-case token characters: a method is a token (RFC 9110 §9.1) and every registered one is
 * upper case; a lower-case one is what a lenient server folds and this proxy refuses. */
const METHOD = /^[!#$%&'*+.^_`|~0-9A-Z-]{1,32}$/
const METHOD_BYTE = /^[!#$%&'*+.^_`|~0-9A-Z-]$/
const MAX_METHOD_BYTES = 32
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
const TARGET = /^[\x21-\x7e]+$/
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/
const MAX_HEADERS = 100
const LF = 0x0a
const CR = 0x0d
const SP = 0x20

type Line = { kind: 'request'; method: string; target: string; version: RequestHead['version'] }

function requestLine(text: string): Line | RequestHeadRefusal {
	const parts = text.split(' ')
	const [method = '', target = '', version = ''] = parts
	if (parts.length !== 3 || !TARGET.test(target)) return 'request-line-invalid'
	if (!METHOD.test(method)) return 'method-invalid'
	if (version === 'HTTP/1.1' || version === 'HTTP/1.0') {
		return { kind: 'request', method, target, version }
	}
	return method === 'PRI' && target === '*' && version === 'HTTP/2.0'
		? 'h2-preface'
		: 'version-unsupported'
}

function headerField(text: string): readonly [string, string] | RequestHeadRefusal {
	if (text.startsWith(' ') || text.startsWith('\t')) return 'obsolete-line-folding'
	const colon = text.indexOf(':')
	const name = text.slice(0, Math.max(colon, 0))
	if (colon <= 0 || !TOKEN.test(name)) return 'header-name-invalid'
	const value = text.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, '')
	return FIELD_VALUE.test(value) ? [name, value] : 'header-value-invalid'
}

/**
 * Reads one head from chunks pushed in order. Lines are cut at LF as bytes arrive and judged when
 * complete; the method is judged byte by byte, so a stream that is not HTTP at all is refused at
 * its first bytes rather than after `maxBytes`.
 */
export class RequestHeadReader {
	readonly #maxBytes: number
	#examined = 0
	#pieces: Buffer[] = []
	#methodBytes = 0
	#methodDone = false
	#line: Line | undefined
	#headers: (readonly [string, string])[] = []
	#settled: RequestHeadRead | undefined

	constructor(maxBytes: number) {
		this.#maxBytes = maxBytes
	}

	/** Bytes examined so far: never more than were pushed (each is looked at once). */
	get examinedBytes(): number {
		return this.#examined
	}

	push(chunk: Buffer): RequestHeadRead {
		if (this.#settled) return this.#settled
		let offset = 0
		while (offset < chunk.length) {
			const newline = chunk.indexOf(LF, offset)
			const end = newline < 0 ? chunk.length : newline + 1
			const piece = chunk.subarray(offset, end)
			this.#examined += piece.length
			if (this.#examined > this.#maxBytes) return this.#settle('head-too-large')
			if (this.#line === undefined) {
				const method = this.#methodPrefix(piece)
				if (method !== undefined) return this.#settle(method)
			}
			if (newline < 0) {
				this.#pieces.push(piece)
				return { kind: 'incomplete' }
			}
			const line = this.#pieces.length === 0 ? piece : Buffer.concat([...this.#pieces, piece])
			this.#pieces = []
			offset = end
			const read = this.#completeLine(line)
			if (read === 'head') {
				const head = { ...this.#requestLine(), headers: this.#headers, length: this.#examined }
				this.#settled = { kind: 'head', head, rest: chunk.subarray(offset) }
				return this.#settled
			}
			if (read !== undefined) return this.#settle(read)
		}
		return { kind: 'incomplete' }
	}

	/** Judges the bytes of the request line's method as they arrive. */
	#methodPrefix(piece: Buffer): RequestHeadRefusal | undefined {
		for (let index = 0; index < piece.length && !this.#methodDone; index++) {
			const byte = piece[index] ?? 0
			if (byte === SP && this.#methodBytes > 0) this.#methodDone = true
			else if (this.#methodBytes === 0 && (byte === CR || byte === LF)) return 'empty-line-first'
			else if (!METHOD_BYTE.test(String.fromCharCode(byte))) return 'method-invalid'
			else if (++this.#methodBytes > MAX_METHOD_BYTES) return 'method-invalid'
		}
		return undefined
	}

	/** One complete line (its LF included): `head` at the blank line after the request line. */
	#completeLine(line: Buffer): RequestHeadRefusal | 'head' | undefined {
		if (line.length < 2 || line[line.length - 2] !== CR) return 'bare-lf'
		const text = line.subarray(0, line.length - 2).toString('latin1')
		if (text.includes('\r')) return 'bare-cr'
		if (this.#line === undefined) {
			if (text === '') return 'empty-line-first'
			const parsed = requestLine(text)
			if (typeof parsed === 'string') return parsed
			this.#line = parsed
			return undefined
		}
		if (text === '') return 'head'
		if (this.#headers.length >= MAX_HEADERS) return 'too-many-header-fields'
		const field = headerField(text)
		if (typeof field === 'string') return field
		this.#headers.push(field)
		return undefined
	}

	#requestLine(): Omit<Line, 'kind'> {
		const { method = '', target = '', version = 'HTTP/1.1' } = this.#line ?? {}
		return { method, target, version }
	}

	#settle(reason: RequestHeadRefusal): RequestHeadRead {
		this.#pieces = []
		this.#settled = { kind: 'invalid', reason }
		return this.#settled
	}
}

/** The head at the start of `bytes`, read in one piece (the bridge request, tests). */
export function readRequestHead(bytes: Buffer, maxBytes: number): RequestHeadRead {
	return new RequestHeadReader(maxBytes).push(bytes)
}

/** Values of header `name` (case-insensitive), in order. */
export function headerValues(head: RequestHead, name: string): string[] {
	const lower = name.toLowerCase()
	return head.headers.filter(([key]) => key.toLowerCase() === lower).map(([, value]) => value)
}

/**
 * The head serialized again with `replace` set (every field of those names dropped first), and
 * with `target` in place of the one sent when given (an absolute-form target made origin-form).
 */
export function rewriteRequestHead(
	head: RequestHead,
	replace: Readonly<Record<string, string>>,
	target: string = head.target,
): Buffer {
	const names = new Set(Object.keys(replace).map((name) => name.toLowerCase()))
	const kept = head.headers.filter(([name]) => !names.has(name.toLowerCase()))
	const lines = [
		`${head.method} ${target} ${head.version}`,
		...[...kept, ...Object.entries(replace)].map(([name, value]) => `${name}: ${value}`),
	]
	return Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1')
}
