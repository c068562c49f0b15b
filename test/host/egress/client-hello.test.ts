import { describe, expect, it } from 'vitest'
import { MAX_CLIENT_HELLO_BYTES, readClientHello } from '../../../src/host/egress/client-hello.js'
import {
	extension,
	helloBody,
	realClientHello,
	records,
	serverNameExtension,
} from './client-hello-bytes.js'

describe('ClientHello server name', () => {
	it('reads the SNI and ALPN of a real node:tls client', async () => {
		const bytes = await realClientHello({
			servername: 'api.example.test',
			alpn: ['h2', 'http/1.1'],
		})
		expect(readClientHello(bytes)).toEqual({
			kind: 'client-hello',
			serverName: 'api.example.test',
			alpn: ['h2', 'http/1.1'],
		})
	})

	it('reports a real ClientHello without SNI as having none', async () => {
		// node:tls sends no server_name for an IP literal host.
		const bytes = await realClientHello({})
		const read = readClientHello(bytes)
		expect(read.kind).toBe('client-hello')
		expect(read).not.toHaveProperty('serverName')
	})

	it('is incomplete on every strict prefix of a real ClientHello', async () => {
		const bytes = await realClientHello({ servername: 'a.example.test' })
		for (const cut of [1, 2, 5, 6, 40, bytes.length - 1]) {
			expect(readClientHello(bytes.subarray(0, cut)).kind).toBe('incomplete')
		}
	})

	it('reassembles a ClientHello fragmented over several records', () => {
		const body = helloBody([
			serverNameExtension('frag.example.test'),
			extension(21, Buffer.alloc(3000)),
		])
		expect(readClientHello(records(body, 100))).toMatchObject({ serverName: 'frag.example.test' })
	})

	it.each([
		['plain HTTP', Buffer.from('GET / HTTP/1.1\r\n'), 'not-tls'],
		['a 0x16 byte without TLS version', Buffer.from([0x16, 0x09, 0x00]), 'not-tls'],
	])('%s is not TLS', (_, bytes, kind) => {
		expect(readClientHello(bytes).kind).toBe(kind)
	})

	it.each<[string, Buffer, string]>([
		[
			'an oversized handshake length',
			Buffer.from([0x16, 3, 1, 0, 4, 1, 0xff, 0xff, 0xff]),
			`a ClientHello of ${0xffffff + 4} bytes`,
		],
		['a record over 18 KiB', Buffer.from([0x16, 3, 1, 0x48, 0x01]), 'a handshake record of'],
		['an empty record', Buffer.from([0x16, 3, 1, 0, 0]), 'a handshake record of 0 bytes'],
		['a ServerHello', Buffer.from([0x16, 3, 1, 0, 4, 2, 0, 0, 0]), 'not a ClientHello'],
		[
			'an alert record in the middle',
			Buffer.concat([
				records(helloBody([serverNameExtension('x.test')]), 10).subarray(0, 15),
				Buffer.from([0x15, 3, 1, 0, 2, 2, 40]),
			]),
			'a non-handshake record',
		],
		['a truncated body', records(Buffer.from([3, 3, 1, 2])), 'a truncated ClientHello'],
		[
			'two server_name extensions',
			records(helloBody([serverNameExtension('a.test'), serverNameExtension('b.test')])),
			'extension 0 twice',
		],
		[
			'two host names in one extension',
			records(helloBody([serverNameExtension('a.test', 'b.test')])),
			'two host names',
		],
		[
			'a non-ASCII server name',
			records(helloBody([serverNameExtension('a\u00e9.test')])),
			'not ASCII',
		],
		[
			'a server_name list longer than its extension',
			records(helloBody([extension(0, Buffer.from([0, 9, 0, 0, 1, 0x61]))])),
			'wrong length',
		],
		[
			'an extension running past the message',
			records(Buffer.concat([helloBody([]).subarray(0, -2), Buffer.from([0, 8, 0, 0, 0, 9])])),
			'extensions of the wrong length',
		],
	])('refuses %s', (_, bytes, reason) => {
		const read = readClientHello(bytes)
		expect(read.kind).toBe('invalid')
		expect(read).toMatchObject({ reason: expect.stringContaining(reason) })
	})

	it('refuses a fragmented ClientHello over the cap before it is all there', () => {
		// Just over the cap once framed: the extensions vector itself stays under 64 KiB.
		const half = 32_760
		expect(2 * (half + 4) + 43).toBeGreaterThan(MAX_CLIENT_HELLO_BYTES)
		const body = helloBody([extension(21, Buffer.alloc(half)), extension(22, Buffer.alloc(half))])
		expect(readClientHello(records(body).subarray(0, 40))).toMatchObject({ kind: 'invalid' })
	})

	it('reads a ClientHello with no extensions at all', () => {
		const body = Buffer.concat([
			Buffer.from([3, 3]),
			Buffer.alloc(32),
			Buffer.from([0, 0, 2, 0x13, 1, 1, 0]),
		])
		expect(readClientHello(records(body))).toEqual({ kind: 'client-hello', alpn: [] })
	})
})
