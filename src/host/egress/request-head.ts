/**
 * An HTTP/1.x request head (request line, header fields, the blank line) read from the first bytes
 * of a stream, bounded: the bridge's CONNECT and RESOLVE requests and the plain HTTP requests the
 * credential injector rewrites are both read with it. Obsolete line folding, bare LF line ends,
 * control characters and whitespace before a colon are refused, never repaired.
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

export type RequestHeadRead =
	| { readonly kind: 'incomplete' }
	| { readonly kind: 'invalid'; readonly reason: string }
	| { readonly kind: 'head'; readonly head: RequestHead }

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
const TARGET = /^[\x21-\x7e]+$/
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/
const MAX_HEADERS = 100

export function readRequestHead(bytes: Buffer, maxBytes: number): RequestHeadRead {
	const end = bytes.indexOf('\r\n\r\n', 0, 'latin1')
	if (end < 0) {
		if (bytes.length >= maxBytes)
			return { kind: 'invalid', reason: `a head over ${maxBytes} bytes` }
		return { kind: 'incomplete' }
	}
	const length = end + 4
	if (length > maxBytes) return { kind: 'invalid', reason: `a head over ${maxBytes} bytes` }
	const text = bytes.subarray(0, end).toString('latin1')
	if (/[\r\n]/.test(text.replaceAll('\r\n', ''))) {
		return { kind: 'invalid', reason: 'a bare CR or LF' }
	}
	const [line = '', ...fields] = text.split('\r\n')
	const parts = line.split(' ')
	const [method = '', target = '', version = ''] = parts
	if (parts.length !== 3 || !TOKEN.test(method) || !TARGET.test(target)) {
		return { kind: 'invalid', reason: 'a malformed request line' }
	}
	if (version !== 'HTTP/1.1' && version !== 'HTTP/1.0') {
		return { kind: 'invalid', reason: 'not HTTP/1.0 or HTTP/1.1' }
	}
	if (fields.length > MAX_HEADERS) return { kind: 'invalid', reason: 'too many header fields' }
	const headers: (readonly [string, string])[] = []
	for (const field of fields) {
		const colon = field.indexOf(':')
		const name = field.slice(0, colon)
		const value = field.slice(colon + 1).trim()
		if (colon <= 0 || !TOKEN.test(name) || !FIELD_VALUE.test(value)) {
			return { kind: 'invalid', reason: 'a malformed header field' }
		}
		headers.push([name, value])
	}
	return { kind: 'head', head: { method, target, version, headers, length } }
}

/** Values of header `name` (case-insensitive), in order. */
export function headerValues(head: RequestHead, name: string): string[] {
	const lower = name.toLowerCase()
	return head.headers.filter(([key]) => key.toLowerCase() === lower).map(([, value]) => value)
}

/** The head serialized again with `replace` set (every field of those names dropped first). */
export function rewriteRequestHead(
	head: RequestHead,
	replace: Readonly<Record<string, string>>,
): Buffer {
	const names = new Set(Object.keys(replace).map((name) => name.toLowerCase()))
	const kept = head.headers.filter(([name]) => !names.has(name.toLowerCase()))
	const lines = [
		`${head.method} ${head.target} ${head.version}`,
		...[...kept, ...Object.entries(replace)].map(([name, value]) => `${name}: ${value}`),
	]
	return Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1')
}
