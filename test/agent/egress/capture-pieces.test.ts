import { createSocket } from 'node:dgram'
import { describe, expect, it } from 'vitest'
import {
	dnsAnswer,
	dnsFormatError,
	readDnsQuestion,
} from '../../../src/agent/egress/dns-message.js'
import { loadEgressCaptureConfig } from '../../../src/agent/egress/egress-capture-config.js'
import { FakeIpAllocator } from '../../../src/agent/egress/fake-ip-allocator.js'
import { isFakeIp, normalizeHostname } from '../../../src/wire/egress-bridge.js'

/** A DNS query as a resolver sends it: one question, RD set. */
function query(name: string, type = 1, id = 0x1234): Buffer {
	const labels = name
		.split('.')
		.map((label) => Buffer.concat([Buffer.from([label.length]), Buffer.from(label, 'latin1')]))
	const tail = Buffer.alloc(4)
	tail.writeUInt16BE(type, 0)
	tail.writeUInt16BE(1, 2)
	const header = Buffer.from([id >> 8, id & 0xff, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0])
	return Buffer.concat([header, ...labels, Buffer.from([0]), tail])
}

describe('fake-IP allocator', () => {
	it('is deterministic, inside 198.18.0.0/15, and maps back', () => {
		const a = new FakeIpAllocator()
		const b = new FakeIpAllocator()
		const address = a.addressFor('api.example.test')
		expect(address).toBe(b.addressFor('api.example.test'))
		expect(address && isFakeIp(address)).toBe(true)
		expect(a.addressFor('api.example.test')).toBe(address)
		expect(address && a.nameFor(address)).toBe('api.example.test')
		expect(a.nameFor('198.18.0.0')).toBeUndefined()
		expect(a.nameFor('10.0.0.1')).toBeUndefined()
	})

	it('never hands one address to two names, and fails closed when full', () => {
		const allocator = new FakeIpAllocator(1000)
		const seen = new Set<string>()
		for (let index = 0; index < 1000; index++) {
			const address = allocator.addressFor(`n${index}.example.test`)
			expect(address).toBeDefined()
			expect(seen.has(address ?? '')).toBe(false)
			seen.add(address ?? '')
		}
		expect(allocator.addressFor('one-more.example.test')).toBeUndefined()
		// Names it already holds keep their address.
		expect(allocator.addressFor('n5.example.test')).toBeDefined()
		expect(allocator.size).toBe(1000)
	})
})

describe('DNS stub messages', () => {
	it('answers an A question with the address, a pointer to the question name and RD copied', () => {
		const question = readDnsQuestion(query('API.Example.test'))
		expect(question).toMatchObject({
			kind: 'question',
			name: 'api.example.test',
			type: 1,
			id: 0x1234,
		})
		if (question.kind !== 'question') throw new Error('no question')
		const answer = dnsAnswer(question, '198.18.3.4')
		expect(answer.readUInt16BE(0)).toBe(0x1234)
		expect(answer.readUInt16BE(2) & 0x800f).toBe(0x8000)
		expect(answer.readUInt16BE(2) & 0x0100).toBe(0x0100)
		expect(answer.readUInt16BE(6)).toBe(1)
		expect([...answer.subarray(-4)]).toEqual([198, 18, 3, 4])
	})

	it('answers AAAA with no records, a refused name with NXDOMAIN', () => {
		const aaaa = readDnsQuestion(query('api.example.test', 28))
		if (aaaa.kind !== 'question') throw new Error('no question')
		const empty = dnsAnswer(aaaa, '198.18.3.4')
		expect(empty.readUInt16BE(2) & 0xf).toBe(0)
		expect(empty.readUInt16BE(6)).toBe(0)
		const refused = dnsAnswer(aaaa, undefined)
		expect(refused.readUInt16BE(2) & 0xf).toBe(3)
	})

	it.each<[string, Buffer, string]>([
		['a short packet', Buffer.alloc(5), 'unreadable'],
		['an oversized packet', Buffer.alloc(600), 'unreadable'],
		[
			'a response',
			Buffer.from(query('a.test').map((byte, index) => (index === 2 ? 0x81 : byte))),
			'malformed',
		],
		[
			'two questions',
			Buffer.from(query('a.test').map((byte, index) => (index === 5 ? 2 : byte))),
			'malformed',
		],
		['a label running past the end', query('a.test').subarray(0, 14), 'malformed'],
		[
			'a compression pointer',
			Buffer.concat([query('a.test').subarray(0, 12), Buffer.from([0xc0, 12, 0, 1, 0, 1])]),
			'malformed',
		],
		['a bad label', query('bad_-.a-.test'), 'malformed'],
		['an all-digit name', query('10.0.0.1'), 'malformed'],
	])('reads %s as %s', (_, packet, kind) => {
		const read = readDnsQuestion(packet)
		expect(read.kind).toBe(kind)
		if (read.kind === 'malformed') expect(dnsFormatError(read).readUInt16BE(2) & 0xf).toBe(1)
	})

	it('a real resolver library accepts the answers (node:dns against a stub socket)', async () => {
		const { Resolver } = await import('node:dns/promises')
		const server = createSocket('udp4')
		const allocator = new FakeIpAllocator()
		server.on('message', (packet, peer) => {
			const question = readDnsQuestion(packet)
			if (question.kind !== 'question') return
			const address = question.name.endsWith('.allowed.test')
				? allocator.addressFor(question.name)
				: undefined
			server.send(dnsAnswer(question, address), peer.port, peer.address)
		})
		await new Promise<void>((resolve) => server.bind(0, '127.0.0.1', resolve))
		const resolver = new Resolver({ timeout: 2000, tries: 1 })
		resolver.setServers([`127.0.0.1:${server.address().port}`])
		try {
			expect(await resolver.resolve4('x.allowed.test')).toEqual([
				allocator.addressFor('x.allowed.test'),
			])
			expect(
				await resolver
					.resolve6('x.allowed.test')
					.catch((error: NodeJS.ErrnoException) => error.code),
			).toBe('ENODATA')
			expect(
				await resolver.resolve4('x.other.test').catch((error: NodeJS.ErrnoException) => error.code),
			).toBe('ENOTFOUND')
		} finally {
			server.close()
		}
	})
})

describe('capture helper settings and names', () => {
	it('reads the ports and socket, or nothing', () => {
		expect(loadEgressCaptureConfig({})).toBeUndefined()
		expect(
			loadEgressCaptureConfig({
				NAMZU_AGENT_EGRESS_PORTS: '80,443,80',
				NAMZU_AGENT_EGRESS_SOCKET: '/run/x.sock',
			}),
		).toEqual({ ports: [80, 443], socketPath: '/run/x.sock' })
		expect(() => loadEgressCaptureConfig({ NAMZU_AGENT_EGRESS_PORTS: '80' })).toThrow('go together')
		expect(() =>
			loadEgressCaptureConfig({
				NAMZU_AGENT_EGRESS_PORTS: '80,0',
				NAMZU_AGENT_EGRESS_SOCKET: '/x',
			}),
		).toThrow('is not a port')
	})

	it('reads an IPv4 address:port as the proxy reached over the network (a microVM guest)', () => {
		expect(
			loadEgressCaptureConfig({
				NAMZU_AGENT_EGRESS_PORTS: '443',
				NAMZU_AGENT_EGRESS_SOCKET: '10.0.2.100:3128',
			}),
		).toEqual({ ports: [443], proxyAddress: { host: '10.0.2.100', port: 3128 } })
		for (const bad of ['proxy:3128', '10.0.2.100', '10.0.2.100:0', '10.0.2.300:3128', ':3128']) {
			expect(() =>
				loadEgressCaptureConfig({
					NAMZU_AGENT_EGRESS_PORTS: '443',
					NAMZU_AGENT_EGRESS_SOCKET: bad,
				}),
			).toThrow('go together')
		}
	})

	it.each([
		['Example.COM.', 'example.com'],
		['_dmarc.example.com', '_dmarc.example.com'],
		['xn--bcher-kva.example', 'xn--bcher-kva.example'],
		['a-.example', undefined],
		['1.2.3.4', undefined],
		['a b.example', undefined],
		['', undefined],
		['.', undefined],
		[`${'a.'.repeat(127)}com`, undefined],
	])('normalizes %j to %j', (name, expected) => {
		expect(normalizeHostname(name)).toBe(expected)
	})
})
