/**
 * `hostPorts`: the one way a sandbox behind the egress proxy reaches a service on the host's
 * loopback. Through a real proxy on a unix socket and real host listeners: without the rule the
 * tunnel to `host.namzu.internal` is refused and the decision reported; with `hostPorts [P]` P is
 * reached (raw bytes both ways) and P+1 — listening too — is refused. A loopback `allowedHosts`
 * entry, which inside the sandbox could only reach the sandbox's own loopback, is refused at
 * construction naming `hostPorts` instead of failing later as a silent reset.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SandboxConfigError } from '../../../src/contract/errors.js'
import {
	HOST_SERVICES_NAME,
	hostPortRules,
	parseAllowedHosts,
} from '../../../src/host/egress/allowed-hosts.js'
import type { EgressDecision } from '../../../src/host/egress/egress-decision.js'
import { type EgressProxy, startEgressProxy } from '../../../src/host/egress/egress-proxy.js'
import { bridge, until } from './egress-test-kit.js'

/** A host loopback echo server on `port` (0: any), prefixing what it echoes with its port. */
function echoServer(port: number): Promise<{ server: Server; port: number }> {
	return new Promise((resolve, reject) => {
		const server = createServer((socket) => {
			socket.on('data', (chunk: Buffer) => socket.write(`${bound}:${chunk.toString()}`))
			socket.on('error', () => socket.destroy())
		})
		let bound = 0
		server.once('error', reject)
		server.listen(port, '127.0.0.1', () => {
			const address = server.address()
			bound = typeof address === 'object' && address ? address.port : 0
			resolve({ server, port: bound })
		})
	})
}

describe('egress hostPorts', () => {
	let dir: string
	const servers: Server[] = []
	const proxies: EgressProxy[] = []
	const decisions: EgressDecision[] = []
	let port = 0

	beforeAll(async () => {
		dir = await mkdtemp(join(tmpdir(), 'namzu-host-ports-'))
		// P and P+1 both listen, so a refusal of P+1 is the policy's, not an empty port's.
		for (let tries = 0; tries < 20 && port === 0; tries++) {
			const first = await echoServer(0)
			const next = await echoServer(first.port + 1).catch(() => undefined)
			servers.push(first.server)
			if (next) {
				servers.push(next.server)
				port = first.port
			}
		}
	})

	afterAll(async () => {
		for (const proxy of proxies) await proxy.close()
		for (const server of servers) server.close()
		await rm(dir, { recursive: true, force: true })
	})

	async function proxy(hostPorts: number[]): Promise<EgressProxy> {
		const started = await startEgressProxy({
			socketPath: join(dir, `proxy-${proxies.length}.sock`),
			rules: [...parseAllowedHosts(['api.example.test']), ...hostPortRules(hostPorts)],
			onDecision: (decision) => decisions.push(decision),
		})
		proxies.push(started)
		return started
	}

	it('without hostPorts, the host loopback is refused and the decision reported', async () => {
		const started = await proxy([])
		for (const target of [`${HOST_SERVICES_NAME}:${port}`, `127.0.0.1:${port}`]) {
			const seen = decisions.length
			const { socket, reply } = await bridge(
				started.socketPath,
				`CONNECT ${target} HTTP/1.1\r\n\r\n`,
			)
			socket.destroy()
			expect(reply).toBe('HTTP/1.1 403 Forbidden')
			await until(() => decisions.length > seen)
			expect(decisions.at(-1)).toMatchObject({ verdict: 'deny', layer: 'connect', port })
		}
	})

	it('with hostPorts [P], P on the host loopback is reached and P+1 is refused', async () => {
		const started = await proxy([port])
		const { socket, reply } = await bridge(
			started.socketPath,
			`CONNECT ${HOST_SERVICES_NAME}:${port} HTTP/1.1\r\n\r\n`,
		)
		expect(reply).toBe('HTTP/1.1 200 Connection Established')
		const echoed = new Promise<string>((resolve) =>
			socket.once('data', (chunk: Buffer) => resolve(chunk.toString())),
		)
		socket.write('ping')
		expect(await echoed).toBe(`${port}:ping`)
		socket.destroy()
		await until(() =>
			decisions.some(
				(d) => d.verdict === 'allow' && d.host === HOST_SERVICES_NAME && d.port === port,
			),
		)
		expect(
			decisions.find((d) => d.verdict === 'allow' && d.host === HOST_SERVICES_NAME),
		).toMatchObject({ rule: `hostPorts:${port}`, address: '127.0.0.1' })

		const seen = decisions.length
		const next = await bridge(
			started.socketPath,
			`CONNECT ${HOST_SERVICES_NAME}:${port + 1} HTTP/1.1\r\n\r\n`,
		)
		next.socket.destroy()
		expect(next.reply).toBe('HTTP/1.1 403 Forbidden')
		await until(() => decisions.length > seen)
		expect(decisions.at(-1)).toMatchObject({
			host: HOST_SERVICES_NAME,
			port: port + 1,
			verdict: 'deny',
			reason: 'no-rule',
		})
	})

	it.each([
		'127.0.0.1/32',
		'127.0.0.1',
		'127.0.0.1:11434',
		'127.0.0.0/8',
		'::1',
		'[::1]:11434',
		'localhost',
		'localhost:11434',
		'tcp://127.0.0.1:5432',
	])('refuses the loopback allowlist entry %s at construction, naming hostPorts', (entry) => {
		let error: unknown
		try {
			parseAllowedHosts(['api.example.test', entry])
		} catch (caught) {
			error = caught
		}
		expect(error).toBeInstanceOf(SandboxConfigError)
		expect(error).toMatchObject({ field: 'egress.allowedHosts[1]' })
		expect(String((error as Error).message)).toContain('hostPorts')
		expect(String((error as Error).message)).toContain(HOST_SERVICES_NAME)
	})

	it('still accepts private ranges that are not loopback, and wide blocks', () => {
		expect(parseAllowedHosts(['10.0.0.0/8', '0.0.0.0/0', '192.168.1.5:8080'])).toHaveLength(3)
	})

	it('refuses a hostPorts value that is not a port, naming its index', () => {
		expect(() => hostPortRules([11434, 0])).toThrow(SandboxConfigError)
		expect(() => hostPortRules([11434, 70_000], 'egress.hostPorts')).toThrow(
			expect.objectContaining({ field: 'egress.hostPorts[1]' }),
		)
		expect(() => hostPortRules('11434')).toThrow(
			expect.objectContaining({ field: 'egress.hostPorts' }),
		)
		expect(hostPortRules(undefined)).toEqual([])
	})
})
