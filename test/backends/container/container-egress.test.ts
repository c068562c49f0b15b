/**
 * `static` and `resolver` egress on the container tier (runc and crun), through the same host
 * proxy and in-guest capture helper as the local tier: every isolation claim attacked, each with
 * its positive control, against upstreams in a stand-in internet namespace.
 */
import { networkInterfaces } from 'node:os'
import { beforeAll, describe, expect, it } from 'vitest'
import type { ContainerSandboxProvider } from '../../../src/backends/container/index.js'
import type { Sandbox } from '../../../src/contract/sandbox.js'
import type { EgressDecision } from '../../../src/host/egress/egress-decision.js'
import {
	BRIDGE_CONNECT,
	CONNECT,
	EGRESS_RUNTIMES,
	GET,
	LOOKUP,
	node,
	useContainerEgressFixture,
} from './container-egress-support.js'

const RUNTIMES = EGRESS_RUNTIMES

/** The host's non-loopback IPv4 addresses. */
function hostAddresses(): string[] {
	return Object.values(networkInterfaces())
		.flatMap((entries) => entries ?? [])
		.filter((entry) => entry.family === 'IPv4' && !entry.internal)
		.map((entry) => entry.address)
}

const fixtureOf = useContainerEgressFixture()

describe.each(RUNTIMES)(
	'static and resolver egress on the container tier (%s)',
	(runtime, skip) => {
		let provider: ContainerSandboxProvider
		let sandbox: Sandbox
		const decisions: EgressDecision[] = []

		beforeAll(async () => {
			if (skip) return
			provider = fixtureOf().provider(runtime)
			sandbox = await provider.create({
				egress: {
					kind: 'static',
					allowedHosts: ['api.example.test', 'tcp://api.example.test:5432'],
				},
				onEgressDecision: (decision) => decisions.push(decision),
			})
			await sandbox.writeFile('upstream-ca.pem', fixtureOf().upstream.caPem)
		}, 120_000)

		it.skipIf(skip)(
			'an allowed name reaches its upstream over HTTPS (positive control)',
			async () => {
				const body = await node(sandbox, GET, ['https://api.example.test/hi', 'upstream-ca.pem'])
				expect(JSON.parse(body)).toMatchObject({ host: 'api.example.test', path: '/hi' })
				expect(decisions.at(-1)).toMatchObject({
					host: 'api.example.test',
					port: 443,
					verdict: 'allow',
					layer: 'sni',
				})
			},
		)

		it.skipIf(skip)(
			'a program ignoring proxy settings is captured: node net.connect and http with HTTP_PROXY set',
			async () => {
				expect(await node(sandbox, CONNECT, ['api.example.test', '5432', 'ping'])).toBe(
					'reached ping',
				)
				const proxyVars = { http_proxy: 'http://127.0.0.1:9', HTTP_PROXY: 'http://127.0.0.1:9' }
				const body = await node(sandbox, GET, ['http://api.example.test/plain'], proxyVars)
				expect(JSON.parse(body)).toMatchObject({ path: '/plain' })
			},
		)

		it.skipIf(skip)(
			'DNS for a disallowed name fails and its connect reaches nothing; an unlisted port is not captured',
			async () => {
				expect(await node(sandbox, LOOKUP, ['other.example.test'])).toBe('ENOTFOUND')
				expect(await node(sandbox, LOOKUP, ['api.example.test'])).toMatch(/^198\.(18|19)\./)
				expect(await node(sandbox, GET, ['http://other.example.test/'])).toBe('ENOTFOUND')
				expect(decisions).toContainEqual(
					expect.objectContaining({ host: 'other.example.test', layer: 'dns', verdict: 'deny' }),
				)
				expect(await node(sandbox, CONNECT, ['api.example.test', '2222'])).toBe('ECONNREFUSED')
			},
		)

		it.skipIf(skip)('refuses a TLS client whose SNI is not the name it connected to', async () => {
			const before = decisions.length
			const out = await node(sandbox, GET, [
				'https://api.example.test/',
				'upstream-ca.pem',
				'other.example.test',
			])
			expect(out).not.toMatch(/"path"/)
			expect(decisions.slice(before)).toContainEqual(
				expect.objectContaining({
					host: 'api.example.test',
					verdict: 'deny',
					layer: 'sni',
					reason: 'sni-mismatch',
				}),
			)
		})

		it.skipIf(skip)(
			'a direct connect to an address fails: the upstream, the host, metadata',
			async () => {
				const { upstream } = fixtureOf()
				const before = decisions.length
				expect(await node(sandbox, CONNECT, [upstream.address, '5432', 'ping'])).not.toMatch(
					/^reached/,
				)
				expect(decisions.slice(before)).toContainEqual(
					expect.objectContaining({ host: upstream.address, layer: 'connect', verdict: 'deny' }),
				)
				for (const address of [upstream.internet.hostSideAddress, ...hostAddresses()]) {
					expect(await node(sandbox, CONNECT, [address, '443', 'x'])).not.toMatch(/^reached/)
				}
				expect(
					await node(sandbox, CONNECT, ['169.254.169.254', '80', 'GET / HTTP/1.0\r\n\r\n']),
				).not.toMatch(/^reached/)
				// Positive control: the same program reaches the allowed name at once.
				expect(await node(sandbox, CONNECT, ['api.example.test', '5432', 'ok'])).toBe('reached ok')
			},
		)

		it.skipIf(skip)(
			'the namespace has no route out but the capture: no interface besides lo',
			async () => {
				const result = await sandbox.exec('cat', [
					'/proc/net/dev',
					'/proc/net/route',
					'/etc/resolv.conf',
				])
				const interfaces = result.stdout
					.split('\n')
					.filter((line) => line.includes(':') && !line.includes('|'))
					.map((line) => line.split(':')[0]?.trim())
					.filter((name) => name !== undefined && /^[a-z0-9]+$/.test(name))
				expect(interfaces).toEqual(['lo'])
				expect(result.stdout).toContain('nameserver 127.0.0.1')
			},
		)

		it.skipIf(skip)(
			'the bridge socket driven by the workload itself reaches only what the policy allows',
			async () => {
				expect(await node(sandbox, BRIDGE_CONNECT, ['api.example.test:5432'])).toBe('reached ping')
				expect(await node(sandbox, BRIDGE_CONNECT, ['other.example.test:5432'])).toBe(
					'HTTP/1.1 403 Forbidden',
				)
				expect(await node(sandbox, BRIDGE_CONNECT, [`${fixtureOf().upstream.address}:5432`])).toBe(
					'HTTP/1.1 403 Forbidden',
				)
				expect(await node(sandbox, BRIDGE_CONNECT, ['private.example.test:443'])).toBe(
					'HTTP/1.1 403 Forbidden',
				)
				// The bridge is read-only: the workload cannot plant a socket of its own there.
				const plant = await sandbox.exec('sh', ['-c', 'touch /run/namzu-egress/x 2>&1; echo $?'])
				expect(plant.stdout.trim().split('\n').at(-1)).not.toBe('0')
			},
		)

		it.skipIf(skip)(
			'a resolver policy is asked at create and enforced like a static one',
			async () => {
				let asked = 0
				const resolved = await provider.create({
					egress: {
						kind: 'resolver',
						resolve: async () => {
							asked++
							return ['tcp://other.example.test:5432']
						},
					},
				})
				try {
					expect(asked).toBe(1)
					expect(await node(resolved, CONNECT, ['other.example.test', '5432', 'hi'])).toBe(
						'reached hi',
					)
					expect(await node(resolved, LOOKUP, ['api.example.test'])).toBe('ENOTFOUND')
				} finally {
					await resolved.destroy()
				}
			},
		)
	},
)
