/**
 * The egress proxy against hostile request bytes, over real sockets: the proxy on a unix socket,
 * upstreams in a stand-in internet. Port 6000 records every byte it receives, so each attack is
 * judged by what actually reached the upstream (nothing), and each positive control by the exact
 * head that did; port 80 is a real HTTP server that answers with the request it routed.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseAllowedHosts } from '../../../src/host/egress/allowed-hosts.js'
import type { EgressDecision } from '../../../src/host/egress/egress-decision.js'
import { type EgressProxy, startEgressProxy } from '../../../src/host/egress/egress-proxy.js'
import { bridge, readAll, until } from './egress-test-kit.js'
import { type EgressUpstream, startEgressUpstream } from './upstream-fixture.js'

const skip = process.getuid?.() === 0 ? undefined : 'needs root (ip netns)'

// Each attack on an HTTP port: what was sent, and the layer and reason it is refused for.
const ATTACKS: readonly (readonly [string, string, string, string])[] = [
	[
		'a request behind an empty line (two pipelined requests for another site)',
		'\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n',
		'http',
		'http-empty-line-first',
	],
	[
		'a lower-case method',
		'get / HTTP/1.1\r\nHost: api.example.test\r\n\r\n',
		'http',
		'http-method-invalid',
	],
	['a bare-LF head', 'GET / HTTP/1.1\nHost: evil.test\n\n', 'http', 'http-bare-lf'],
	['HTTP/1.2', 'GET / HTTP/1.2\r\nHost: evil.test\r\n\r\n', 'http', 'http-version-unsupported'],
	['the HTTP/2 preface (PRI *)', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'http', 'http-h2-preface'],
	[
		'an h2c upgrade',
		'GET / HTTP/1.1\r\nHost: api.example.test\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n',
		'http',
		'h2c-refused',
	],
	[
		'an absolute-form target for another site',
		'GET http://evil.test/ HTTP/1.1\r\nHost: api.example.test\r\n\r\n',
		'host',
		'target-authority-mismatch',
	],
	[
		'a second Host field',
		'GET / HTTP/1.1\r\nHost: api.example.test\r\nHost: evil.test\r\n\r\n',
		'host',
		'host-repeated',
	],
	['no Host', 'GET / HTTP/1.1\r\n\r\n', 'host', 'host-missing'],
	[
		'obsolete line folding',
		'GET / HTTP/1.1\r\nHost: api.example.test\r\nX-A: a\r\n evil\r\n\r\n',
		'http',
		'http-obsolete-line-folding',
	],
	[
		'a space before a colon',
		'GET / HTTP/1.1\r\nHost: api.example.test\r\nHost : evil.test\r\n\r\n',
		'http',
		'http-header-name-invalid',
	],
	[
		'a NUL in a value',
		'GET / HTTP/1.1\r\nHost: api.example.test\r\nX-A: a\u0000b\r\n\r\n',
		'http',
		'http-header-value-invalid',
	],
	[
		'Content-Length beside Transfer-Encoding',
		'POST / HTTP/1.1\r\nHost: api.example.test\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
		'http',
		'http-body-framing-invalid',
	],
	[
		'CONNECT inside the tunnel',
		'CONNECT evil.test:443 HTTP/1.1\r\nHost: api.example.test\r\n\r\n',
		'http',
		'method-connect-refused',
	],
	['a text protocol', 'PING\r\n', 'http', 'http-method-invalid'],
	[
		'a binary protocol',
		'\u0000\u0000\u0000\u0008\u0004\u00d2\u0016\u002f',
		'http',
		'http-method-invalid',
	],
]

describe.skipIf(skip)('HTTP through the egress proxy is parsed, not guessed', () => {
	let upstream: EgressUpstream
	let dir: string
	let proxy: EgressProxy
	const decisions: EgressDecision[] = []

	/** Opens a tunnel to `port`, sends `payload`, ends after `endMs`; what came back until close. */
	async function exchange(port: number, payload: string | Buffer, endMs = 300): Promise<string> {
		const { socket, reply } = await bridge(
			proxy.socketPath,
			`CONNECT api.example.test:${port} HTTP/1.1\r\n\r\n`,
		)
		expect(reply).toBe('HTTP/1.1 200 Connection Established')
		socket.on('error', () => undefined)
		socket.write(typeof payload === 'string' ? Buffer.from(payload, 'latin1') : payload)
		const timer = setTimeout(() => socket.end(), endMs)
		const answer = await readAll(socket)
		clearTimeout(timer)
		return answer
	}

	/** What the recording upstream got on each connection of the last exchange, once all closed. */
	async function reachedUpstream(): Promise<string[]> {
		await until(() => proxy.connectionCount() === 0)
		return upstream.recorded()
	}

	beforeAll(async () => {
		upstream = await startEgressUpstream()
		dir = await mkdtemp(join(tmpdir(), 'namzu-egress-attacks-'))
		proxy = await startEgressProxy({
			socketPath: join(dir, 'proxy.sock'),
			rules: parseAllowedHosts([
				'api.example.test',
				'api.example.test:6000',
				'tcp://api.example.test:5432',
			]),
			lookup: upstream.lookup,
			upstreamCa: [upstream.caPem],
			onDecision: (decision) => decisions.push(decision),
		})
	})

	afterAll(async () => {
		await proxy?.close()
		await upstream?.close()
		if (dir) await rm(dir, { recursive: true, force: true })
	})

	it.each(ATTACKS)(
		'refuses %s: no byte reaches the upstream, the refusal is reported with its layer',
		async (_case, payload, layer, reason) => {
			expect(await exchange(6000, payload)).toBe('')
			// The upstream was dialed beside the read (or not yet): either way it got nothing.
			expect((await reachedUpstream()).join('')).toBe('')
			expect(decisions.at(-1)).toEqual({
				host: 'api.example.test',
				port: 6000,
				verdict: 'deny',
				layer,
				reason,
				address: upstream.address,
			})
		},
	)

	it.each([
		[
			'a GET',
			'GET /one?x=1 HTTP/1.1\r\nHost: api.example.test\r\nAccept: */*\r\n\r\n',
			'GET /one?x=1 HTTP/1.1\r\nHost: api.example.test\r\nAccept: */*\r\nConnection: close\r\n\r\n',
		],
		[
			'a POST with a body',
			'POST /up HTTP/1.1\r\nHost: api.example.test\r\nContent-Length: 5\r\n\r\nhello',
			'POST /up HTTP/1.1\r\nHost: api.example.test\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello',
		],
		[
			'a chunked upload',
			'POST /up HTTP/1.1\r\nHost: api.example.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
			'POST /up HTTP/1.1\r\nHost: api.example.test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
		],
		[
			"a keep-alive client's first request (the pipelined second never goes)",
			'GET /a HTTP/1.1\r\nHost: api.example.test\r\nConnection: keep-alive\r\n\r\nGET /b HTTP/1.1\r\nHost: evil.test\r\n\r\n',
			'GET /a HTTP/1.1\r\nHost: api.example.test\r\nConnection: close\r\n\r\n',
		],
		[
			'an absolute-form target naming the Host (sent origin-form)',
			'GET http://api.example.test:6000/x HTTP/1.1\r\nHost: api.example.test:6000\r\n\r\n',
			'GET /x HTTP/1.1\r\nHost: api.example.test:6000\r\nConnection: close\r\n\r\n',
		],
	])(
		'forwards %s as exactly one rewritten request (positive control)',
		async (_case, payload, expected) => {
			await exchange(6000, payload)
			expect(await reachedUpstream()).toEqual([expected])
			expect(decisions.at(-1)).toMatchObject({ verdict: 'allow', layer: 'host', port: 6000 })
		},
	)

	it('a head trickled a byte at a time still goes through whole (positive control)', async () => {
		const { socket } = await bridge(
			proxy.socketPath,
			'CONNECT api.example.test:6000 HTTP/1.1\r\n\r\n',
		)
		const head = 'GET /slow HTTP/1.1\r\nHost: api.example.test\r\n\r\n'
		for (const byte of head) {
			socket.write(byte)
			await new Promise((resolve) => setImmediate(resolve))
		}
		socket.end()
		await readAll(socket)
		expect(await reachedUpstream()).toEqual([
			'GET /slow HTTP/1.1\r\nHost: api.example.test\r\nConnection: close\r\n\r\n',
		])
	})

	it('a real HTTP server on :80 routes the rewritten absolute-form request to the allowed name', async () => {
		const answer = await exchange(
			80,
			'GET http://API.example.test/routed?q=1 HTTP/1.1\r\nHost: api.example.test\r\n\r\n',
			5000,
		)
		const seen = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))
		expect(seen).toMatchObject({ host: 'api.example.test', path: '/routed?q=1' })
		expect(
			await exchange(80, 'GET http://evil.test/ HTTP/1.1\r\nHost: api.example.test\r\n\r\n'),
		).toBe('')
		expect(decisions.at(-1)).toMatchObject({ layer: 'host', reason: 'target-authority-mismatch' })
	})

	it('a tcp:// port carries any bytes as sent: the HTTP/2 preface, a lower-case request (positive control)', async () => {
		for (const payload of [
			'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
			'get / HTTP/1.1\r\nHost: evil.test\r\n\r\n',
		]) {
			expect(await exchange(5432, payload)).toBe(payload)
			expect(decisions.at(-1)).toMatchObject({
				verdict: 'allow',
				layer: 'ip',
				port: 5432,
				rule: 'tcp://api.example.test:5432',
			})
		}
	})
})
