import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { LocalSandboxProvider } from '../../../src/backends/local/index.js'
import type { Sandbox } from '../../../src/contract/sandbox.js'
import type { EgressDecision } from '../../../src/host/egress/egress-decision.js'
import type { EgressUpstream } from '../../host/egress/upstream-fixture.js'
import { BRIDGE_CONNECT, CONNECT, LOOKUP, SLOW_DRAIN, UPGRADE } from '../egress-guest-programs.js'
import { bwrapSkipReason } from './bwrap-available.js'
import { type ProxiedProvider, startProxiedProvider } from './proxied-provider.js'

const bwrapSkip = bwrapSkipReason()
const skip = bwrapSkip ?? (process.getuid?.() === 0 ? undefined : 'needs root (ip netns)')

async function node(sandbox: Sandbox, program: string, ...args: string[]): Promise<string> {
	const result = await sandbox.exec('node', ['-e', program, ...args], { timeout: 15_000 })
	return result.stdout.trim()
}

describe.skipIf(skip)('static and resolver egress through the proxy (local tier)', () => {
	let upstream: EgressUpstream
	let provider: LocalSandboxProvider
	let fixture: ProxiedProvider | undefined
	let sandbox: Sandbox
	const decisions: EgressDecision[] = []

	beforeAll(async () => {
		fixture = await startProxiedProvider()
		;({ upstream, provider } = fixture)
		sandbox = await provider.create({
			egress: {
				kind: 'static',
				allowedHosts: [
					'api.example.test',
					'tcp://api.example.test:5432',
					'tcp://api.example.test:9000',
				],
			},
			onEgressDecision: (decision) => decisions.push(decision),
		})
	}, 60_000)

	afterAll(async () => {
		await fixture?.close()
	})

	it('an allowed name reaches its upstream over HTTPS with curl (positive control)', async () => {
		await sandbox.writeFile('upstream-ca.pem', upstream.caPem)
		const result = await sandbox.exec(
			'curl',
			['-sS', '--noproxy', '*', '--cacert', 'upstream-ca.pem', 'https://api.example.test/hi'],
			{ timeout: 15_000 },
		)
		expect(result.stderr).toBe('')
		expect(JSON.parse(result.stdout)).toMatchObject({ host: 'api.example.test', path: '/hi' })
		expect(decisions.at(-1)).toMatchObject({
			host: 'api.example.test',
			port: 443,
			verdict: 'allow',
			layer: 'sni',
		})
	})

	it('a program ignoring proxy settings is captured (node net.connect to the name)', async () => {
		expect(await node(sandbox, CONNECT, 'api.example.test', '5432', 'ping')).toBe('reached ping')
		// Plain HTTP with proxy variables pointing nowhere and --noproxy: captured all the same.
		const result = await sandbox.exec(
			'curl',
			['-sS', '--noproxy', '*', 'http://api.example.test/plain'],
			{
				timeout: 15_000,
				env: { http_proxy: 'http://127.0.0.1:9', HTTPS_PROXY: 'http://127.0.0.1:9' },
			},
		)
		expect(JSON.parse(result.stdout)).toMatchObject({ path: '/plain' })
	})

	it('a program upgrading plain HTTP (WebSocket-style) to an allowed name talks over the switched connection', async () => {
		expect(await node(sandbox, UPGRADE, 'api.example.test', 'over the upgrade')).toBe(
			'101 echo: over the upgrade',
		)
		expect(decisions.at(-1)).toMatchObject({ host: 'api.example.test', port: 80, layer: 'host' })
	})

	it('a slow reader gets every byte of a stream the upstream ends, up to its last', async () => {
		// The upstream sends 64 MiB and closes; the workload stalls for a second 32 MiB before the end.
		const total = String(64 * 1024 * 1024)
		expect(await node(sandbox, SLOW_DRAIN, 'api.example.test', '9000', total)).toBe(total)
	})

	it('DNS for a disallowed name fails, and a connect to it reaches nothing', async () => {
		expect(await node(sandbox, LOOKUP, 'other.example.test')).toBe('ENOTFOUND')
		expect(await node(sandbox, LOOKUP, 'api.example.test')).toMatch(/^198\.(18|19)\./)
		expect(decisions).toContainEqual(
			expect.objectContaining({ host: 'other.example.test', layer: 'dns', verdict: 'deny' }),
		)
		// A port no rule names for an allowed name: nothing listens on it (not captured).
		expect(await node(sandbox, CONNECT, 'api.example.test', '2222')).toBe('ECONNREFUSED')
	})

	it('refuses a TLS client whose SNI is not the name it connected to', async () => {
		await sandbox.writeFile('upstream-ca.pem', upstream.caPem)
		const result = await sandbox.exec(
			'curl',
			[
				'-sS',
				'--cacert',
				'upstream-ca.pem',
				'--connect-to',
				'other.example.test:443:api.example.test:443',
				'https://other.example.test/',
			],
			{ timeout: 15_000 },
		)
		expect(result.exitCode).not.toBe(0)
		expect(result.stdout).toBe('')
		expect(decisions.at(-1)).toMatchObject({
			host: 'api.example.test',
			verdict: 'deny',
			layer: 'sni',
			reason: 'sni-mismatch',
		})
	})

	it('a direct connect to an address no rule allows fails: the upstream, loopback, the host', async () => {
		const before = decisions.length
		expect(await node(sandbox, CONNECT, upstream.address, '5432', 'ping')).not.toMatch(/^reached/)
		expect(decisions.slice(before)).toContainEqual(
			expect.objectContaining({ host: upstream.address, layer: 'connect', verdict: 'deny' }),
		)
		expect(await node(sandbox, CONNECT, upstream.internet.hostSideAddress, '443', 'x')).not.toMatch(
			/^reached/,
		)
		expect(
			await node(sandbox, CONNECT, '169.254.169.254', '80', 'GET / HTTP/1.0\r\n\r\n'),
		).not.toMatch(/^reached/)
	})

	it('the bridge socket driven by the workload itself reaches only what the policy allows', async () => {
		expect(await node(sandbox, BRIDGE_CONNECT, 'api.example.test:5432')).toBe('reached ping')
		expect(await node(sandbox, BRIDGE_CONNECT, 'other.example.test:5432')).toBe(
			'HTTP/1.1 403 Forbidden',
		)
		expect(await node(sandbox, BRIDGE_CONNECT, `${upstream.address}:5432`)).toBe(
			'HTTP/1.1 403 Forbidden',
		)
		expect(await node(sandbox, BRIDGE_CONNECT, '127.0.0.1:80')).toBe('HTTP/1.1 403 Forbidden')
		expect(await node(sandbox, BRIDGE_CONNECT, 'private.example.test:443')).toBe(
			'HTTP/1.1 403 Forbidden',
		)
	})

	it('onEgressDecision saw every verdict, each naming its layer', () => {
		const layers = new Set(decisions.map((decision) => `${decision.verdict}:${decision.layer}`))
		expect([...layers].sort()).toEqual(
			expect.arrayContaining(['allow:dns', 'allow:sni', 'deny:connect', 'deny:dns', 'deny:sni']),
		)
		for (const decision of decisions) expect(decision.reason).toMatch(/^[a-z0-9:-]+$/)
	})

	it('a resolver policy is asked at create and enforced like a static one', async () => {
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
			expect(await node(resolved, CONNECT, 'other.example.test', '5432', 'hi')).toBe('reached hi')
			expect(await node(resolved, LOOKUP, 'api.example.test')).toBe('ENOTFOUND')
		} finally {
			await resolved.destroy()
		}
	})
})
