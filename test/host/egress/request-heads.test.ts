import { describe, expect, it } from 'vitest'
import { readBridgeRequest } from '../../../src/host/egress/bridge-request.js'
import { classifyFirstBytes, MAX_EARLY_BYTES } from '../../../src/host/egress/first-bytes.js'
import {
	headerValues,
	readRequestHead,
	rewriteRequestHead,
} from '../../../src/host/egress/request-head.js'
import { MAX_BRIDGE_HEAD_BYTES } from '../../../src/wire/egress-bridge.js'
import { realClientHello } from './client-hello-bytes.js'

const bytes = (text: string) => Buffer.from(text, 'latin1')

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
		})
	})

	it.each([
		['GET / HTTP/1.1\r\nHost: a', 'incomplete'],
		['GET / HTTP/1.1\nHost: a\r\n\r\n', 'invalid'],
		['GET / HTTP/1.1\r\nHost : a\r\n\r\n', 'invalid'],
		['GET / HTTP/1.1\r\n folded\r\n\r\n', 'invalid'],
		['GET / HTTP/2\r\n\r\n', 'invalid'],
		['GET  / HTTP/1.1\r\n\r\n', 'invalid'],
		['G(T / HTTP/1.1\r\n\r\n', 'invalid'],
		['GET / HTTP/1.1\r\nX: a\u0001b\r\n\r\n', 'invalid'],
		['GET / HTTP/1.1\r\nX: a\rb\r\n\r\n', 'invalid'],
	])('%j is %s', (text, kind) => {
		expect(readRequestHead(bytes(text), 1024).kind).toBe(kind)
	})

	it('refuses a head past its bound, complete or not', () => {
		const long = `GET / HTTP/1.1\r\nX: ${'a'.repeat(200)}\r\n\r\n`
		expect(readRequestHead(bytes(long), 100)).toMatchObject({ kind: 'invalid' })
		expect(readRequestHead(bytes(long.slice(0, 150)), 100)).toMatchObject({ kind: 'invalid' })
		const many = `GET / HTTP/1.1\r\n${'X: 1\r\n'.repeat(101)}\r\n`
		expect(readRequestHead(bytes(many), 4096)).toMatchObject({ reason: 'too many header fields' })
	})

	it('rewrites a head: fields of those names replaced, case-insensitively', () => {
		const read = readRequestHead(
			bytes('GET / HTTP/1.1\r\nhost: a\r\nauthorization: guest\r\n\r\n'),
			1024,
		)
		if (read.kind !== 'head') throw new Error('no head')
		const out = rewriteRequestHead(read.head, { Authorization: 'Bearer s', Connection: 'close' })
		expect(out.toString('latin1')).toBe(
			'GET / HTTP/1.1\r\nhost: a\r\nAuthorization: Bearer s\r\nConnection: close\r\n\r\n',
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
		['GET http://a.test/ HTTP/1.1\r\n\r\n', 'method GET refused'],
		['CONNECT a.test HTTP/1.1\r\n\r\n', 'host:port'],
		['CONNECT a.test:0 HTTP/1.1\r\n\r\n', 'host:port'],
		['CONNECT a.test:99999 HTTP/1.1\r\n\r\n', 'host:port'],
		['CONNECT bad_-.-x.test:443 HTTP/1.1\r\n\r\n', 'malformed host'],
		['CONNECT -a.test:443 HTTP/1.1\r\n\r\n', 'malformed host'],
		['CONNECT 1.2.3:443 HTTP/1.1\r\n\r\n', 'malformed host'],
		['CONNECT 999.1.1.1:443 HTTP/1.1\r\n\r\n', 'malformed host'],
		['CONNECT [1.2.3.4]:443 HTTP/1.1\r\n\r\n', 'malformed host'],
		['CONNECT 2001:db8::1:443 HTTP/1.1\r\n\r\n', 'malformed host'],
		['CONNECT a.test:443 HTTP/1.1\r\n\r\n'.replace('a.test', 'a'.repeat(64)), 'malformed host'],
		['RESOLVE a..test HTTP/1.1\r\n\r\n', 'malformed name'],
		['RESOLVE 10.0.0.1 HTTP/1.1\r\n\r\n', 'malformed name'],
	])('refuses %j', (text, reason) => {
		expect(readBridgeRequest(bytes(text))).toMatchObject({
			kind: 'invalid',
			reason: expect.stringContaining(reason),
		})
	})

	it('refuses a head longer than the bridge allows', () => {
		const long = `CONNECT a.test:443 HTTP/1.1\r\nX: ${'a'.repeat(MAX_BRIDGE_HEAD_BYTES)}\r\n\r\n`
		expect(readBridgeRequest(bytes(long)).kind).toBe('invalid')
	})
})

describe('first bytes in a tunnel', () => {
	it('tells TLS, HTTP and other protocols apart', async () => {
		const hello = await realClientHello({ servername: 'a.example.test' })
		expect(classifyFirstBytes(hello)).toMatchObject({ kind: 'tls', serverName: 'a.example.test' })
		expect(classifyFirstBytes(bytes('GET / HTTP/1.1\r\nHost: a\r\n\r\n'))).toMatchObject({
			kind: 'http',
		})
		expect(classifyFirstBytes(bytes('PING\r\n'))).toEqual({ kind: 'other' })
		expect(classifyFirstBytes(bytes('AUTH secret\r\n'))).toEqual({ kind: 'other' })
		expect(classifyFirstBytes(Buffer.from([0, 0, 0, 8, 4, 0xd2, 0x16, 0x2f]))).toEqual({
			kind: 'other',
		})
		expect(classifyFirstBytes(bytes('SSH-2.0-x\r\n'))).toEqual({ kind: 'other' })
	})

	it('waits while the bytes could still be either', async () => {
		const hello = await realClientHello({ servername: 'a.example.test' })
		expect(classifyFirstBytes(hello.subarray(0, 10)).kind).toBe('incomplete')
		expect(classifyFirstBytes(bytes('GET')).kind).toBe('incomplete')
		expect(classifyFirstBytes(bytes('GET / HTTP/1.1\r\nHost')).kind).toBe('incomplete')
		expect(classifyFirstBytes(Buffer.alloc(0)).kind).toBe('incomplete')
	})

	it('refuses a broken ClientHello, a broken HTTP head and too much early data', () => {
		expect(classifyFirstBytes(Buffer.from([0x16, 3, 1, 0, 4, 2, 0, 0, 0]))).toMatchObject({
			kind: 'invalid',
			layer: 'sni',
		})
		expect(classifyFirstBytes(bytes('GET / HTTP/1.1\r\nX : y\r\n\r\n'))).toMatchObject({
			kind: 'invalid',
			layer: 'host',
		})
		const huge = bytes(`POST / HTTP/1.1\r\nX: ${'a'.repeat(MAX_EARLY_BYTES)}`)
		expect(classifyFirstBytes(huge)).toMatchObject({ kind: 'invalid', layer: 'host' })
	})
})
