/**
 * The HTTP-framing attacks on the egress proxy that the local and container tiers both send from
 * inside a sandbox to port 6000 of the recording upstream: each row is the case's name, the bytes
 * the workload sends, and the `reason` the proxy must report when it refuses them.
 */

/** One attack: [what it is, the bytes sent, the refusal reason expected]. */
export type HttpFramingAttack = readonly [name: string, payload: string, reason: string]

export const HTTP_FRAMING_ATTACKS: readonly HttpFramingAttack[] = [
	[
		'a request behind an empty line (two pipelined for another site)',
		'\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n',
		'http-empty-line-first',
	],
	[
		'a lower-case method',
		'get / HTTP/1.1\r\nHost: api.example.test\r\n\r\n',
		'http-method-invalid',
	],
	['a bare-LF head', 'GET / HTTP/1.1\nHost: evil.test\n\n', 'http-bare-lf'],
	['HTTP/1.2', 'GET / HTTP/1.2\r\nHost: evil.test\r\n\r\n', 'http-version-unsupported'],
	['the HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'http-h2-preface'],
	[
		'an h2c upgrade',
		'GET / HTTP/1.1\r\nHost: api.example.test\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n',
		'h2c-refused',
	],
	[
		'an absolute-form target for another site',
		'GET http://evil.test/ HTTP/1.1\r\nHost: api.example.test\r\n\r\n',
		'target-authority-mismatch',
	],
	[
		'a second Host',
		'GET / HTTP/1.1\r\nHost: api.example.test\r\nHost: evil.test\r\n\r\n',
		'host-repeated',
	],
	['a protocol that is not HTTP', 'PING\r\n', 'http-method-invalid'],
]

/** The payload as a program argument (the hostile bytes include CR, LF and empty lines). */
export const base64 = (text: string) => Buffer.from(text, 'latin1').toString('base64')

/** What the in-sandbox `EXCHANGE` program prints: the reply bytes and how the connection ended. */
export interface Exchanged {
	readonly reply: string
	readonly end: string
}
