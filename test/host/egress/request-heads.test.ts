import { describe, expect, it } from 'vitest'
import { readBridgeRequest } from '../../../src/host/egress/bridge-request.js'
import { FirstBytesReader, MAX_TUNNEL_HEAD_BYTES } from '../../../src/host/egress/first-bytes.js'
import {
	headerValues,
	RequestHeadReader,
	readRequestHead,
	rewriteRequestHead,
} from '../../../src/host/egress/request-head.js'
import { MAX_BRIDGE_HEAD_BYTES } from '../../../src/wire/egress-bridge.js'
import { realClientHello } from './client-hello-bytes.js'

const bytes = (text: string) => Buffer.from(text, 'latin1')

/** Feeds `data` one byte at a time, as a trickling client sends it. */
function trickle<T>(reader: { push(chunk: Buffer): T }, data: Buffer): T[] {
	return [...data].map((byte) => reader.push(Buffer.from([byte])))
}

describe('request heads', () => {
	it('reads a head and where its body starts', () => {
		const read = readRequestHead(
			bytes('GET /x HTTP/1.1\r\nHost: a.test\r\nX-A: 1 \r\n\r\nbody'),
			1024,
		)
		expect(read).toEqual({
			kind: 'head',
			head: {
				method: 'GET',
				target: '/x',
				version: 'HTTP/1.1',
				headers: [
					['Host', 'a.test'],
					['X-A', '1'],
				],
				length: 42,
			},
			rest: bytes('body'),
		})
	})

	// What a lenient server repairs and a strict reader refuses, each by name.
	it.each([
		['a leading empty line', '\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n', 'empty-line-first'],
		['a leading bare LF', '\nGET / HTTP/1.1\r\nHost: a\r\n\r\n', 'empty-line-first'],
		['a lower-case method', 'get / HTTP/1.1\r\nHost: a\r\n\r\n', 'method-invalid'],
		['a mixed-case method', 'Get / HTTP/1.1\r\nHost: a\r\n\r\n', 'method-invalid'],
		['a method with a separator', 'G(T / HTTP/1.1\r\n\r\n', 'method-invalid'],
		['a binary first byte', '\u0000\u0001GET', 'method-invalid'],
		['a bare-LF head', 'GET / HTTP/1.1\nHost: a\n\n', 'bare-lf'],
		['a bare LF inside the fields', 'GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n', 'bare-lf'],
		['a bare CR in a value', 'GET / HTTP/1.1\r\nX: a\rb\r\n\r\n', 'bare-cr'],
		['HTTP/1.2', 'GET / HTTP/1.2\r\nHost: a\r\n\r\n', 'version-unsupported'],
		['HTTP/2 on a request line', 'GET / HTTP/2\r\n\r\n', 'version-unsupported'],
		['a lower-case version', 'GET / http/1.1\r\n\r\n', 'version-unsupported'],
		['the HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'h2-preface'],
		['two spaces', 'GET  / HTTP/1.1\r\n\r\n', 'request-line-invalid'],
		['a tab for a space', 'GET\t/ HTTP/1.1\r\n\r\n', 'method-invalid'],
		['obsolete line folding', 'GET / HTTP/1.1\r\nX: a\r\n folded\r\n\r\n', 'obsolete-line-folding'],
		['a space before the colon', 'GET / HTTP/1.1\r\nHost : a\r\n\r\n', 'header-name-invalid'],
		['a field without a colon', 'GET / HTTP/1.1\r\nHost a\r\n\r\n', 'header-name-invalid'],
		['a NUL in a value', 'GET / HTTP/1.1\r\nX: a\u0000b\r\n\r\n', 'header-value-invalid'],
		[
			'a control character in a value',
			'GET / HTTP/1.1\r\nX: a\u0001b\r\n\r\n',
			'header-value-invalid',
		],
		['a DEL in a value', 'GET / HTTP/1.1\r\nX: a\u007fb\r\n\r\n', 'header-value-invalid'],
	])('refuses %s (%j) as %s', (_case, text, reason) => {
		expect(readRequestHead(bytes(text), 1024)).toEqual({ kind: 'invalid', reason })
	})

	it('refuses a stream that is not HTTP at its first bytes, not after the bound', () => {
		const reader = new RequestHeadReader(MAX_TUNNEL_HEAD_BYTES)
		expect(reader.push(bytes('\r'))).toEqual({ kind: 'invalid', reason: 'empty-line-first' })
		expect(new RequestHeadReader(1024).push(bytes('g'))).toMatchObject({ kind: 'invalid' })
		expect(new RequestHeadReader(1024).push(bytes('G'))).toEqual({ kind: 'incomplete' })
		expect(new RequestHeadReader(1024).push(bytes('A'.repeat(33)))).toMatchObject({
			reason: 'method-invalid',
		})
	})

	it('reads the same head however its bytes are split, examining each byte once', () => {
		const pad = Array.from({ length: 12 }, (_, i) => `X-Pad-${i}: ${'a'.repeat(4000)}\r\n`)
		const text = `POST /up HTTP/1.1\r\nHost: a.test\r\n${pad.join('')}Content-Length: 2\r\n\r\nok`
		const whole = readRequestHead(bytes(text), MAX_TUNNEL_HEAD_BYTES)
		const reader = new RequestHeadReader(MAX_TUNNEL_HEAD_BYTES)
		const steps = trickle(reader, bytes(text))
		// One byte at a time: incomplete until the blank line, then the same head.
		const decided = steps.findIndex((step) => step.kind !== 'incomplete')
		expect(decided).toBe(text.length - 3)
		expect(steps[decided]).toMatchObject({
			kind: 'head',
			head: whole.kind === 'head' && whole.head,
		})
		// Linear: every byte pushed was examined once, never the head again per byte.
		expect(reader.examinedBytes).toBe(text.length - 2)
	})

	it('refuses a head past its bound, complete or not, and too many fields', () => {
		const long = `GET / HTTP/1.1\r\nX: ${'a'.repeat(200)}\r\n\r\n`
		expect(readRequestHead(bytes(long), 100)).toMatchObject({ reason: 'head-too-large' })
		expect(readRequestHead(bytes(long.slice(0, 150)), 100)).toMatchObject({
			reason: 'head-too-large',
		})
		const reader = new RequestHeadReader(100)
		expect(trickle(reader, bytes(long)).at(-1)).toMatchObject({ reason: 'head-too-large' })
		expect(reader.examinedBytes).toBe(101)
		const many = `GET / HTTP/1.1\r\n${'X: 1\r\n'.repeat(101)}\r\n`
		expect(readRequestHead(bytes(many), 4096)).toMatchObject({ reason: 'too-many-header-fields' })
	})

	it('rewrites a head: fields of those names replaced, case-insensitively, the target if given', () => {
		const read = readRequestHead(
			bytes('GET http://a/x HTTP/1.1\r\nhost: a\r\nauthorization: guest\r\n\r\n'),
			1024,
		)
		if (read.kind !== 'head') throw new Error('no head')
		const out = rewriteRequestHead(
			read.head,
			{ Authorization: 'Bearer s', Connection: 'close' },
			'/x',
		)
		expect(out.toString('latin1')).toBe(
			'GET /x HTTP/1.1\r\nhost: a\r\nAuthorization: Bearer s\r\nConnection: close\r\n\r\n',
		)
		expect(headerValues(read.head, 'HOST')).toEqual(['a'])
	})
})

describe('bridge requests', () => {
	it.each([
		[
			'CONNECT api.example.test:443 HTTP/1.1\r\n\r\n',
			{ kind: 'connect', port: 443, target: { kind: 'name', name: 'api.example.test' } },
		],
		[
			'CONNECT API.Example.TEST.:80 HTTP/1.1\r\nX: y\r\n\r\n',
			{ kind: 'connect', port: 80, target: { kind: 'name', name: 'api.example.test' } },
		],
		[
			'CONNECT 203.0.113.9:22 HTTP/1.1\r\n\r\n',
			{ kind: 'connect', port: 22, target: { kind: 'address', text: '203.0.113.9' } },
		],
		[
			'CONNECT [2001:db8::1]:443 HTTP/1.1\r\n\r\n',
			{ kind: 'connect', port: 443, target: { kind: 'address', text: '2001:db8::1' } },
		],
		['RESOLVE a.example.test HTTP/1.1\r\n\r\n', { kind: 'resolve', name: 'a.example.test' }],
	])('reads %j', (text, request) => {
		expect(readBridgeRequest(bytes(text))).toMatchObject({ kind: 'request', request })
	})

	it.each([
		['GET http://a.test/ HTTP/1.1\r\n\r\n', 'method-refused'],
		['CONNECT a.test HTTP/1.1\r\n\r\n', 'connect-target-invalid'],
		['CONNECT a.test:0 HTTP/1.1\r\n\r\n', 'connect-target-invalid'],
		['CONNECT a.test:99999 HTTP/1.1\r\n\r\n', 'connect-target-invalid'],
		['CONNECT bad_-.-x.test:443 HTTP/1.1\r\n\r\n', 'connect-host-invalid'],
		['CONNECT -a.test:443 HTTP/1.1\r\n\r\n', 'connect-host-invalid'],
		['CONNECT 1.2.3:443 HTTP/1.1\r\n\r\n', 'connect-host-invalid'],
		['CONNECT 999.1.1.1:443 HTTP/1.1\r\n\r\n', 'connect-host-invalid'],
		['CONNECT [1.2.3.4]:443 HTTP/1.1\r\n\r\n', 'connect-host-invalid'],
		['CONNECT 2001:db8::1:443 HTTP/1.1\r\n\r\n', 'connect-host-invalid'],
		[
			'CONNECT a.test:443 HTTP/1.1\r\n\r\n'.replace('a.test', 'a'.repeat(64)),
			'connect-host-invalid',
		],
		['RESOLVE a..test HTTP/1.1\r\n\r\n', 'resolve-name-invalid'],
		['RESOLVE 10.0.0.1 HTTP/1.1\r\n\r\n', 'resolve-name-invalid'],
		['connect a.test:443 HTTP/1.1\r\n\r\n', 'method-invalid'],
		['CONNECT a.test:443 HTTP/1.1\n\n', 'bare-lf'],
	])('refuses %j', (text, reason) => {
		expect(readBridgeRequest(bytes(text))).toEqual({ kind: 'invalid', reason })
	})

	it('refuses a head longer than the bridge allows', () => {
		const long = `CONNECT a.test:443 HTTP/1.1\r\nX: ${'a'.repeat(MAX_BRIDGE_HEAD_BYTES)}\r\n\r\n`
		expect(readBridgeRequest(bytes(long))).toEqual({ kind: 'invalid', reason: 'head-too-large' })
	})
})

describe('first bytes in a tunnel', () => {
	it('tells TLS from HTTP by the first byte, and gives each what the proxy forwards', async () => {
		const hello = await realClientHello({ servername: 'a.example.test' })
		expect(new FirstBytesReader().push(hello)).toMatchObject({
			kind: 'tls',
			serverName: 'a.example.test',
			bytes: hello,
		})
		expect(
			new FirstBytesReader().push(
				bytes('POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nok'),
			),
		).toMatchObject({ kind: 'http', head: { method: 'POST' }, early: bytes('ok') })
	})

	// Nothing is "another protocol": on a port no tcp:// rule names, it is refused.
	it.each([
		['a text protocol', 'PING\r\n'],
		['SSH', 'SSH-2.0-x\r\n'],
		['a binary protocol', '\u0000\u0000\u0000\u0008\u0004\u00d2\u0016\u002f'],
		['a lower-case request', 'get / HTTP/1.1\r\nHost: a\r\n\r\n'],
		['an empty line first', '\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n'],
		['the HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'],
	])('refuses %s', (_case, text) => {
		expect(new FirstBytesReader().push(bytes(text))).toMatchObject({
			kind: 'invalid',
			layer: 'http',
		})
	})

	it('waits while the bytes could still be a head or a ClientHello', async () => {
		const hello = await realClientHello({ servername: 'a.example.test' })
		expect(new FirstBytesReader().push(hello.subarray(0, 10)).kind).toBe('incomplete')
		expect(new FirstBytesReader().push(bytes('GET')).kind).toBe('incomplete')
		expect(new FirstBytesReader().push(bytes('GET / HTTP/1.1\r\nHost')).kind).toBe('incomplete')
		expect(new FirstBytesReader().push(Buffer.alloc(0)).kind).toBe('incomplete')
	})

	it('reads a ClientHello trickled a byte at a time', async () => {
		const hello = await realClientHello({ servername: 'a.example.test' })
		const steps = trickle(new FirstBytesReader(), hello)
		expect(steps.slice(0, -1).every((step) => step.kind === 'incomplete')).toBe(true)
		expect(steps.at(-1)).toMatchObject({ kind: 'tls', serverName: 'a.example.test' })
	})

	it('refuses a broken ClientHello and a head past its bound', () => {
		expect(new FirstBytesReader().push(Buffer.from([0x16, 3, 1, 0, 4, 2, 0, 0, 0]))).toEqual({
			kind: 'invalid',
			layer: 'sni',
			reason: 'client-hello-invalid',
		})
		const huge = bytes(`POST / HTTP/1.1\r\nX: ${'a'.repeat(MAX_TUNNEL_HEAD_BYTES)}`)
		expect(new FirstBytesReader().push(huge)).toEqual({
			kind: 'invalid',
			layer: 'http',
			reason: 'http-head-too-large',
		})
	})
})
