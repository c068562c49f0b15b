import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { connect as netConnect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connect as tlsConnect } from 'node:tls'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseAllowedHosts } from '../../../src/host/egress/allowed-hosts.js'
import type { EgressDecision } from '../../../src/host/egress/egress-decision.js'
import {
	type EgressProxy,
	type EgressProxyOptions,
	startEgressProxy,
} from '../../../src/host/egress/egress-proxy.js'
import { MAX_HELD_UPGRADE_BYTES } from '../../../src/host/egress/first-request-only.js'
import { parseIpAddress } from '../../../src/host/egress/ip-address.js'
import { bridge, readAll, until } from './egress-test-kit.js'
import { type EgressUpstream, startEgressUpstream } from './upstream-fixture.js'

const skip = process.getuid?.() === 0 ? undefined : 'needs root (ip netns)'

/** Everything `socket` sends until `text` has arrived (or it ends). */
function readUntil(socket: Socket, text: string): Promise<string> {
	return new Promise((resolve) => {
		let seen = ''
		const onData = (chunk: Buffer) => {
			seen += chunk.toString('latin1')
			if (seen.includes(text)) finish()
		}
		const finish = () => {
			socket.off('data', onData)
			resolve(seen)
		}
		socket.on('data', onData)
		socket.once('close', finish)
	})
}

const upgradeHead = (path: string) =>
	`GET ${path} HTTP/1.1\r\nHost: api.example.test\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n`

function body(response: string): Record<string, unknown> {
	return JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>
}

describe.skipIf(skip)('egress proxy on a unix socket', () => {
	let upstream: EgressUpstream
	let dir: string
	const decisions: EgressDecision[] = []
	const proxies: EgressProxy[] = []

	async function proxy(entries: string[], extra: Partial<EgressProxyOptions> = {}) {
		const started = await startEgressProxy({
			socketPath: join(dir, `proxy-${proxies.length}.sock`),
			rules: parseAllowedHosts(entries),
			lookup: upstream.lookup,
			upstreamCa: [upstream.caPem],
			hostAddresses: [parseIpAddress(upstream.internet.hostSideAddress)].flatMap((a) =>
				a ? [a] : [],
			),
			onDecision: (decision) => decisions.push(decision),
			...extra,
		})
		proxies.push(started)
		return started
	}

	beforeAll(async () => {
		upstream = await startEgressUpstream()
		dir = await mkdtemp(join(tmpdir(), 'namzu-egress-proxy-'))
	})

	afterAll(async () => {
		for (const started of proxies) await started.close()
		await upstream?.close()
		if (dir) await rm(dir, { recursive: true, force: true })
	})

	it('tunnels TLS to an allowed name, with the SNI of that name (positive control)', async () => {
		const started = await proxy(['api.example.test'])
		const { socket, reply } = await bridge(
			started.socketPath,
			'CONNECT api.example.test:443 HTTP/1.1\r\n\r\n',
		)
		expect(reply).toBe('HTTP/1.1 200 Connection Established')
		const tls = tlsConnect({ socket, servername: 'api.example.test', ca: [upstream.caPem] })
		tls.write('GET /hello HTTP/1.1\r\nHost: api.example.test\r\nConnection: close\r\n\r\n')
		const response = await readAll(tls)
		expect(body(response)).toMatchObject({ host: 'api.example.test', path: '/hello' })
		expect(decisions.at(-1)).toMatchObject({
			host: 'api.example.test',
			port: 443,
			verdict: 'allow',
			layer: 'sni',
			rule: 'api.example.test',
			address: upstream.address,
		})
	})

	it('refuses a name no rule allows, before resolving or dialing anything', async () => {
		const started = await proxy(['api.example.test'])
		const { reply } = await bridge(
			started.socketPath,
			'CONNECT other.example.test:443 HTTP/1.1\r\n\r\n',
		)
		expect(reply).toBe('HTTP/1.1 403 Forbidden')
		expect(decisions.at(-1)).toEqual({
			host: 'other.example.test',
			port: 443,
			verdict: 'deny',
			layer: 'connect',
			reason: 'no-rule',
		})
	})

	it('refuses a TLS client whose SNI is not the name it connected to', async () => {
		const started = await proxy(['api.example.test'])
		const { socket } = await bridge(
			started.socketPath,
			'CONNECT api.example.test:443 HTTP/1.1\r\n\r\n',
		)
		const tls = tlsConnect({ socket, servername: 'other.example.test', ca: [upstream.caPem] })
		const failed = await new Promise<string>((resolve) => {
			tls.once('secureConnect', () => resolve('connected'))
			tls.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message))
			tls.once('close', () => resolve('closed'))
		})
		expect(failed).not.toBe('connected')
		expect(decisions.at(-1)).toMatchObject({
			verdict: 'deny',
			layer: 'sni',
			reason: 'sni-mismatch',
		})
	})

	it('refuses a TLS client without SNI on a name tunnel', async () => {
		const started = await proxy(['api.example.test'])
		const { socket } = await bridge(
			started.socketPath,
			'CONNECT api.example.test:443 HTTP/1.1\r\n\r\n',
		)
		const tls = tlsConnect({ socket, ca: [upstream.caPem], rejectUnauthorized: false })
		tls.on('error', () => undefined)
		await readAll(tls)
		expect(decisions.at(-1)).toMatchObject({ verdict: 'deny', layer: 'sni', reason: 'sni-absent' })
	})

	it('refuses a plain HTTP request whose Host names another server', async () => {
		const started = await proxy(['api.example.test'])
		const { socket } = await bridge(
			started.socketPath,
			'CONNECT api.example.test:80 HTTP/1.1\r\n\r\n',
		)
		socket.write('GET / HTTP/1.1\r\nHost: other.example.test\r\n\r\n')
		expect(await readAll(socket)).toBe('')
		expect(decisions.at(-1)).toMatchObject({
			verdict: 'deny',
			layer: 'host',
			reason: 'host-mismatch',
		})
	})

	it('one plain HTTP request per tunnel: a second request cannot name another Host unchecked', async () => {
		const started = await proxy(['api.example.test'])
		const { socket } = await bridge(
			started.socketPath,
			'CONNECT api.example.test:80 HTTP/1.1\r\n\r\n',
		)
		socket.write(
			'GET /one HTTP/1.1\r\nHost: api.example.test\r\n\r\nGET /two HTTP/1.1\r\nHost: other.example.test\r\n\r\n',
		)
		const response = await readAll(socket)
		expect(response.match(/HTTP\/1\.1 200/g)).toHaveLength(1)
		expect(body(response)).toMatchObject({ path: '/one' })
	})

	it.each([
		['a GET with no body', 'GET /one HTTP/1.1\r\nHost: api.example.test\r\n\r\n', ''],
		[
			'a POST with a Content-Length body',
			'POST /one HTTP/1.1\r\nHost: api.example.test\r\nContent-Length: 5\r\n\r\n',
			'hello',
		],
		[
			'a POST with a chunked body',
			'POST /one HTTP/1.1\r\nHost: api.example.test\r\nTransfer-Encoding: chunked\r\n\r\n',
			'5\r\nhello\r\n0\r\n\r\n',
		],
	])(
		'forwards only the first request of a tunnel to the upstream (%s), never a pipelined second',
		async (_case, head, payload) => {
			const started = await proxy(['api.example.test:5432'])
			const { socket, reply } = await bridge(
				started.socketPath,
				'CONNECT api.example.test:5432 HTTP/1.1\r\n\r\n',
			)
			expect(reply).toBe('HTTP/1.1 200 Connection Established')
			// The echo upstream returns exactly what reached it.
			socket.write(`${head}${payload}GET /two HTTP/1.1\r\nHost: other.example.test\r\n\r\n`)
			setTimeout(() => socket.end(), 300)
			const echoed = await readAll(socket)
			expect(echoed).toContain('/one HTTP/1.1')
			expect(echoed.endsWith(`\r\n\r\n${payload}`)).toBe(true)
			expect(echoed).not.toContain('/two')
			expect(echoed).not.toContain('other.example.test')
		},
	)

	it('refuses a request whose body framing is ambiguous (Content-Length and Transfer-Encoding)', async () => {
		const started = await proxy(['api.example.test:5432'])
		const { socket } = await bridge(
			started.socketPath,
			'CONNECT api.example.test:5432 HTTP/1.1\r\n\r\n',
		)
		socket.write(
			'POST / HTTP/1.1\r\nHost: api.example.test\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
		)
		expect(await readAll(socket)).toBe('')
		expect(decisions.at(-1)).toMatchObject({
			verdict: 'deny',
			layer: 'http',
			reason: 'http-body-framing-invalid',
		})
	})

	it('a plain HTTP upgrade to an allowed name switches protocols and carries bytes both ways after the 101', async () => {
		const started = await proxy(['api.example.test'])
		const { socket } = await bridge(
			started.socketPath,
			'CONNECT api.example.test:80 HTTP/1.1\r\n\r\n',
		)
		socket.write(upgradeHead('/ws'))
		expect(await readUntil(socket, '\r\n\r\n')).toMatch(/^HTTP\/1\.1 101 /)
		socket.write('after the switch')
		expect(await readUntil(socket, 'after the switch')).toBe('after the switch')
		socket.destroy()
	})

	it('bytes sent right behind an upgrade request wait for the 101, then arrive in order', async () => {
		const started = await proxy(['api.example.test'])
		const { socket } = await bridge(
			started.socketPath,
			'CONNECT api.example.test:80 HTTP/1.1\r\n\r\n',
		)
		socket.write(`${upgradeHead('/slow')}early bytes`)
		setTimeout(() => socket.write(' and later ones'), 100)
		const seen = await readUntil(socket, 'later ones')
		expect(seen).toMatch(/^HTTP\/1\.1 101 [\s\S]*\r\n\r\nearly bytes and later ones$/)
		socket.destroy()
	})

	it('an upgrade the upstream refuses seals the tunnel: nothing after the request reaches it', async () => {
		const started = await proxy(['api.example.test'])
		const { socket } = await bridge(
			started.socketPath,
			'CONNECT api.example.test:80 HTTP/1.1\r\n\r\n',
		)
		socket.write(`${upgradeHead('/refuse')}GET /two HTTP/1.1\r\nHost: other.example.test\r\n\r\n`)
		setTimeout(() => socket.end(), 300)
		const response = await readAll(socket)
		expect(response).toMatch(/^HTTP\/1\.1 400 /)
		expect(response.match(/HTTP\/1\.1 /g)).toHaveLength(1)
		expect(response).not.toContain('/two')
	})

	it('ends a tunnel whose client sends more than the held bound before the upgrade is answered', async () => {
		const started = await proxy(['api.example.test'])
		const { socket } = await bridge(
			started.socketPath,
			'CONNECT api.example.test:80 HTTP/1.1\r\n\r\n',
		)
		socket.on('error', () => undefined)
		socket.write(upgradeHead('/slow'))
		socket.write(Buffer.alloc(MAX_HELD_UPGRADE_BYTES + 1, 0x61))
		expect(await readAll(socket)).not.toContain('101')
	})

	it('refuses an IP literal no CIDR rule covers, and reaches one a rule does', async () => {
		const started = await proxy(['api.example.test', `tcp://${upstream.address}/32:5432`])
		const denied = await bridge(
			started.socketPath,
			`CONNECT ${upstream.address}:443 HTTP/1.1\r\n\r\n`,
		)
		expect(denied.reply).toBe('HTTP/1.1 403 Forbidden')
		expect(decisions.at(-1)).toMatchObject({ layer: 'connect', reason: 'no-rule' })
		const allowed = await bridge(
			started.socketPath,
			`CONNECT ${upstream.address}:5432 HTTP/1.1\r\n\r\n`,
		)
		expect(allowed.reply).toBe('HTTP/1.1 200 Connection Established')
		allowed.socket.end('PING\r\n')
		expect(await readAll(allowed.socket)).toBe('PING\r\n')
		expect(decisions.at(-1)).toMatchObject({
			verdict: 'allow',
			layer: 'ip',
			rule: `tcp://${upstream.address}/32:5432`,
		})
	})

	it('refuses an allowed name that resolves to loopback, link-local, the host itself, or one of them inside NAT64 or 6to4', async () => {
		const started = await proxy(
			['private.example.test', 'metadata.example.test', '*.example.test'],
			{
				lookup: async (name) => {
					if (name === 'self.example.test') return [upstream.internet.hostSideAddress]
					// Internal IPv4 addresses spelled inside IPv6 forms a translator would carry.
					if (name === 'nat64.example.test') return ['64:ff9b::127.0.0.1']
					if (name === 'sixtofour.example.test') return ['2002:a9fe:a9fe::1']
					return upstream.lookup(name)
				},
			},
		)
		for (const [name, reason] of [
			['private.example.test', 'private-range:loopback'],
			['metadata.example.test', 'private-range:link-local'],
			['self.example.test', 'private-range:host-address'],
			['nat64.example.test', 'private-range:nat64:loopback'],
			['sixtofour.example.test', 'private-range:6to4:link-local'],
		]) {
			const { reply } = await bridge(started.socketPath, `CONNECT ${name}:80 HTTP/1.1\r\n\r\n`)
			expect(reply).not.toBe('HTTP/1.1 200 Connection Established')
			expect(decisions.at(-1)).toMatchObject({ host: name, verdict: 'deny', layer: 'ip', reason })
		}
		const direct = await bridge(started.socketPath, 'CONNECT 127.0.0.1:80 HTTP/1.1\r\n\r\n')
		expect(direct.reply).toBe('HTTP/1.1 403 Forbidden')
	})

	it('a CIDR rule naming a private range lets a name resolving into it through', async () => {
		// 10/8 is in the deny set; the CIDR rule lets the proxy dial it (loopback is `hostPorts`'s).
		const started = await proxy(['private.example.test:9', '10.0.0.0/8:9'], {
			lookup: async (name) =>
				name === 'private.example.test' ? ['10.255.255.1'] : upstream.lookup(name),
			connectTimeoutMs: 300,
		})
		const { socket } = await bridge(
			started.socketPath,
			'CONNECT private.example.test:9 HTTP/1.1\r\n\r\n',
		)
		socket.write('GET / HTTP/1.1\r\nHost: private.example.test:9\r\n\r\n')
		await readAll(socket)
		// The route chose 10.255.255.1 (the deny set let it) and the request went to it.
		expect(decisions.at(-1)).toMatchObject({
			host: 'private.example.test',
			address: '10.255.255.1',
		})
		expect(decisions.at(-1)?.reason).not.toMatch(/^private-range/)
	})

	it('passes a server-first protocol through on a tcp:// port (the upstream speaks first)', async () => {
		const started = await proxy(['tcp://api.example.test:2222'])
		const { socket, reply } = await bridge(
			started.socketPath,
			'CONNECT api.example.test:2222 HTTP/1.1\r\n\r\n',
		)
		expect(reply).toBe('HTTP/1.1 200 Connection Established')
		const banner = await new Promise<string>((resolve) =>
			socket.once('data', (d: Buffer) => resolve(String(d))),
		)
		expect(banner).toBe('BANNER\r\n')
		socket.destroy()
	})

	it('refuses a server-first protocol on a port no tcp:// rule names, at once and by name', async () => {
		const started = await proxy(['api.example.test:2222'])
		const { socket, reply } = await bridge(
			started.socketPath,
			'CONNECT api.example.test:2222 HTTP/1.1\r\n\r\n',
		)
		expect(reply).toBe('HTTP/1.1 200 Connection Established')
		// The banner never reaches the client: the tunnel is refused when the upstream speaks.
		expect(await readAll(socket)).toBe('')
		expect(decisions.at(-1)).toMatchObject({
			port: 2222,
			verdict: 'deny',
			layer: 'http',
			reason: 'upstream-spoke-first',
		})
	})

	it('answers RESOLVE for allowed names only, and refuses other methods and malformed heads', async () => {
		const started = await proxy(['api.example.test'])
		expect(
			(await bridge(started.socketPath, 'RESOLVE api.example.test HTTP/1.1\r\n\r\n')).reply,
		).toBe('HTTP/1.1 200 OK')
		expect(decisions.at(-1)).toMatchObject({
			host: 'api.example.test',
			layer: 'dns',
			verdict: 'allow',
		})
		expect(
			(await bridge(started.socketPath, 'RESOLVE other.example.test HTTP/1.1\r\n\r\n')).reply,
		).toBe('HTTP/1.1 403 Forbidden')
		expect(decisions.at(-1)).toMatchObject({
			host: 'other.example.test',
			layer: 'dns',
			verdict: 'deny',
		})
		expect(
			(await bridge(started.socketPath, 'GET http://api.example.test/ HTTP/1.1\r\n\r\n')).reply,
		).toBe('HTTP/1.1 403 Forbidden')
		expect(
			(
				await bridge(
					started.socketPath,
					`CONNECT api.example.test:443 HTTP/1.1\r\nX: ${'a'.repeat(9000)}\r\n\r\n`,
				)
			).reply,
		).toBe('HTTP/1.1 403 Forbidden')
	})

	it('ends a connection that never finishes its setup', async () => {
		const started = await proxy(['api.example.test'], { headTimeoutMs: 200 })
		const socket = netConnect(started.socketPath)
		socket.write('CONNECT api.exa')
		await readAll(socket)
		const { socket: tunnel } = await bridge(
			started.socketPath,
			'CONNECT api.example.test:443 HTTP/1.1\r\n\r\n',
		)
		// Tunnel open, no ClientHello ever sent: ended too.
		tunnel.write(Buffer.from([0x16, 3, 1]))
		await readAll(tunnel)
		await until(() => started.connectionCount() === 0)
	})

	it('close() ends open tunnels and removes its socket', async () => {
		const started = await proxy(['api.example.test:5432'])
		const { socket } = await bridge(
			started.socketPath,
			'CONNECT api.example.test:5432 HTTP/1.1\r\n\r\n',
		)
		socket.write('x')
		const ended = readAll(socket)
		await started.close()
		await ended
		expect(existsSync(started.socketPath)).toBe(false)
		expect(started.connectionCount()).toBe(0)
	})
})
