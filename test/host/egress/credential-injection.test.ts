import { mkdtemp, rm } from 'node:fs/promises'
import { connect as netConnect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connect as tlsConnect } from 'node:tls'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseAllowedHosts } from '../../../src/host/egress/allowed-hosts.js'
import type { EgressDecision } from '../../../src/host/egress/egress-decision.js'
import { type EgressProxy, startEgressProxy } from '../../../src/host/egress/egress-proxy.js'
import { readAll } from './egress-test-kit.js'
import { type EgressUpstream, startEgressUpstream } from './upstream-fixture.js'

const skip = process.getuid?.() === 0 ? undefined : 'needs root (ip netns)'
const SECRET = 'Bearer s3cret-egress-token'

function tunnel(socketPath: string, target: string): Promise<Socket> {
	return new Promise((resolve, reject) => {
		const socket = netConnect(socketPath)
		socket.once('connect', () => socket.write(`CONNECT ${target} HTTP/1.1\r\n\r\n`))
		let text = ''
		const onData = (chunk: Buffer) => {
			text += chunk.toString('latin1')
			if (!text.includes('\r\n\r\n')) return
			socket.off('data', onData)
			if (text.startsWith('HTTP/1.1 200')) resolve(socket)
			else reject(new Error(text))
		}
		socket.on('data', onData)
		socket.once('error', reject)
	})
}

function seen(response: string): { host: string; headers: Record<string, string> } {
	return JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4))
}

describe.skipIf(skip)('credentials added by the egress proxy', () => {
	let upstream: EgressUpstream
	let dir: string
	let proxy: EgressProxy
	const decisions: EgressDecision[] = []

	beforeAll(async () => {
		upstream = await startEgressUpstream()
		dir = await mkdtemp(join(tmpdir(), 'namzu-egress-creds-'))
		proxy = await startEgressProxy({
			socketPath: join(dir, 'proxy.sock'),
			rules: parseAllowedHosts(['creds.example.test', 'api.example.test']),
			credentials: [{ host: 'creds.example.test', headers: { Authorization: SECRET } }],
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

	it('sets the header on plain HTTP to that host, replacing what the guest sent', async () => {
		const socket = await tunnel(proxy.socketPath, 'creds.example.test:80')
		socket.write('GET / HTTP/1.1\r\nHost: creds.example.test\r\nAuthorization: guest-guess\r\n\r\n')
		const { headers } = seen(await readAll(socket))
		expect(headers.authorization).toBe(SECRET)
		expect(headers.connection).toBe('close')
	})

	it('terminates HTTPS for that host with the sandbox CA and sets the header upstream', async () => {
		expect(proxy.caCertificatePem).toContain('BEGIN CERTIFICATE')
		const socket = await tunnel(proxy.socketPath, 'creds.example.test:443')
		const tls = tlsConnect({
			socket,
			servername: 'creds.example.test',
			ca: [proxy.caCertificatePem ?? ''],
			ALPNProtocols: ['h2', 'http/1.1'],
		})
		await new Promise((resolve, reject) => {
			tls.once('secureConnect', resolve)
			tls.once('error', reject)
		})
		expect(tls.alpnProtocol).toBe('http/1.1')
		tls.write('GET /v1 HTTP/1.1\r\nHost: creds.example.test\r\n\r\n')
		const { host, headers } = seen(await readAll(tls))
		expect(host).toBe('creds.example.test')
		expect(headers.authorization).toBe(SECRET)
	})

	it('never terminates or adds anything for a host without credentials', async () => {
		const socket = await tunnel(proxy.socketPath, 'api.example.test:443')
		// Trusting only the sandbox CA fails: the certificate is the upstream's own.
		const tls = tlsConnect({
			socket,
			servername: 'api.example.test',
			ca: [proxy.caCertificatePem ?? ''],
		})
		const outcome = await new Promise<string>((resolve) => {
			tls.once('secureConnect', () => resolve('connected'))
			tls.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'))
		})
		expect(outcome).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE')
		const plain = await tunnel(proxy.socketPath, 'api.example.test:80')
		plain.write('GET / HTTP/1.1\r\nHost: api.example.test\r\n\r\n')
		expect(seen(await readAll(plain)).headers.authorization).toBeUndefined()
	})

	it('sends no credential to an upstream whose certificate does not verify', async () => {
		const strict = await startEgressProxy({
			socketPath: join(dir, 'strict.sock'),
			rules: parseAllowedHosts(['creds.example.test']),
			credentials: [{ host: 'creds.example.test', headers: { Authorization: SECRET } }],
			lookup: upstream.lookup,
			// No upstreamCa: the test upstream's certificate is not trusted by the host.
			onDecision: (decision) => decisions.push(decision),
		})
		try {
			const socket = await tunnel(strict.socketPath, 'creds.example.test:443')
			const tls = tlsConnect({
				socket,
				servername: 'creds.example.test',
				ca: [strict.caCertificatePem ?? ''],
			})
			tls.on('error', () => undefined)
			tls.write('GET / HTTP/1.1\r\nHost: creds.example.test\r\n\r\n')
			expect(await readAll(tls)).toBe('')
			expect(decisions.at(-1)).toMatchObject({
				verdict: 'deny',
				reason: 'upstream-certificate-refused',
			})
		} finally {
			await strict.close()
		}
	})

	/** A request over TLS the proxy terminates for the credentialed host; what came back. */
	async function overTerminatedTls(head: string): Promise<string> {
		const socket = await tunnel(proxy.socketPath, 'creds.example.test:443')
		const tls = tlsConnect({
			socket,
			servername: 'creds.example.test',
			ca: [proxy.caCertificatePem ?? ''],
		})
		tls.on('error', () => undefined)
		tls.write(head)
		return readAll(tls)
	}

	it('refuses a terminated request whose Host names another server, and upgrades', async () => {
		for (const head of [
			'GET / HTTP/1.1\r\nHost: api.example.test\r\n\r\n',
			'GET / HTTP/1.1\r\nHost: creds.example.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
		]) {
			expect(await overTerminatedTls(head)).toBe('')
		}
		expect(decisions.slice(-2).map((d) => d.reason)).toEqual(['host-mismatch', 'upgrade-refused'])
	})

	it.each([
		[
			'an absolute http:// target for another site',
			'GET http://evil.test/x HTTP/1.1\r\nHost: creds.example.test\r\n\r\n',
			'target-authority-mismatch',
		],
		[
			'an absolute https:// target for another site',
			'GET https://evil.test/x HTTP/1.1\r\nHost: creds.example.test\r\n\r\n',
			'target-authority-mismatch',
		],
		[
			'a second Host for another site',
			'GET / HTTP/1.1\r\nHost: creds.example.test\r\nHost: evil.test\r\n\r\n',
			'host-repeated',
		],
		[
			'TRACE (which echoes the head)',
			'TRACE / HTTP/1.1\r\nHost: creds.example.test\r\n\r\n',
			'trace-refused',
		],
		[
			'a lower-case method',
			'get / HTTP/1.1\r\nHost: creds.example.test\r\n\r\n',
			'http-method-invalid',
		],
		[
			'a leading empty line',
			'\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n',
			'http-empty-line-first',
		],
	])(
		'inside terminated TLS, refuses %s: never forwarded, with or without the credential',
		async (_case, head, reason) => {
			expect(await overTerminatedTls(head)).toBe('')
			expect(decisions.at(-1)).toMatchObject({
				host: 'creds.example.test',
				port: 443,
				verdict: 'deny',
				reason,
			})
		},
	)

	it('inside terminated TLS, an absolute target naming the host gets the credential, sent origin-form', async () => {
		const response = await overTerminatedTls(
			'GET https://creds.example.test/v2?a=b HTTP/1.1\r\nHost: creds.example.test\r\n\r\n',
		)
		expect(JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4))).toMatchObject({
			host: 'creds.example.test',
			path: '/v2?a=b',
			headers: { authorization: SECRET },
		})
	})

	it('on plain :80, an absolute target for another site is refused, never sent with or without the credential', async () => {
		const socket = await tunnel(proxy.socketPath, 'creds.example.test:80')
		socket.write('GET http://evil.test/ HTTP/1.1\r\nHost: creds.example.test\r\n\r\n')
		expect(await readAll(socket)).toBe('')
		expect(decisions.at(-1)).toMatchObject({
			host: 'creds.example.test',
			port: 80,
			verdict: 'deny',
			layer: 'host',
			reason: 'target-authority-mismatch',
		})
	})
})
