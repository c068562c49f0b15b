/**
 * What a client's first bytes inside a tunnel are, so the proxy can check the name they carry
 * before anything reaches the upstream: a TLS ClientHello (its SNI), an HTTP/1.x request head (its
 * Host field), or some other protocol (passed through; the tunnel's target already decided where
 * it goes). Bounded: more than `MAX_EARLY_BYTES` without a decision is refused.
 */
import { readClientHello } from './client-hello.js'
import { type RequestHead, readRequestHead } from './request-head.js'

/** Early data held back while the first bytes are classified. */
export const MAX_EARLY_BYTES = 64 * 1024

export type FirstBytes =
	| { readonly kind: 'incomplete' }
	| { readonly kind: 'invalid'; readonly layer: 'sni' | 'host'; readonly reason: string }
	| { readonly kind: 'tls'; readonly serverName?: string; readonly alpn: readonly string[] }
	| { readonly kind: 'http'; readonly head: RequestHead }
	| { readonly kind: 'other' }

const METHOD_PREFIX = /^[A-Z]{1,16}$/
const HTTP_START = /^[A-Z]{1,16} /

export function classifyFirstBytes(bytes: Buffer): FirstBytes {
	if (bytes.length === 0) return { kind: 'incomplete' }
	if (bytes[0] === 0x16) {
		const hello = readClientHello(bytes)
		if (hello.kind === 'incomplete') {
			return bytes.length >= MAX_EARLY_BYTES
				? { kind: 'invalid', layer: 'sni', reason: 'client-hello-too-large' }
				: hello
		}
		if (hello.kind === 'client-hello') {
			return {
				kind: 'tls',
				alpn: hello.alpn,
				...(hello.serverName === undefined ? {} : { serverName: hello.serverName }),
			}
		}
		// 0x16 then no TLS version: not TLS after all, and no protocol this proxy relays.
		return { kind: 'invalid', layer: 'sni', reason: 'client-hello-invalid' }
	}
	const start = bytes.subarray(0, 17).toString('latin1')
	if (METHOD_PREFIX.test(start) && bytes.length < 17) return { kind: 'incomplete' }
	if (!HTTP_START.test(start)) return { kind: 'other' }
	// A first line that is complete and not an HTTP request line: some text protocol (`AUTH x`).
	const lineEnd = bytes.indexOf('\r\n', 0, 'latin1')
	if (lineEnd >= 0 && !/ HTTP\/1\.[01]$/.test(bytes.subarray(0, lineEnd).toString('latin1'))) {
		return { kind: 'other' }
	}
	const read = readRequestHead(bytes, MAX_EARLY_BYTES)
	if (read.kind === 'incomplete') return read
	if (read.kind === 'invalid')
		return { kind: 'invalid', layer: 'host', reason: 'http-head-invalid' }
	return { kind: 'http', head: read.head }
}
