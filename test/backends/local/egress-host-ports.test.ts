/**
 * `hostPorts` end to end on the local tier: a real sandbox behind the egress proxy, real echo
 * servers on the host's loopback at P and P+1. With `hostPorts: [P]` a program in the sandbox
 * that dials `host.namzu.internal:P` reaches the host's service (positive control) while P+1 — a
 * listening port too — is not reached (not a captured port: dropped in the sandbox's namespace); a sandbox without the rule reaches
 * neither; 127.0.0.1:P inside the sandbox is the sandbox's own loopback, never the host's.
 */
import { createServer, type Server } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { LocalSandboxProvider } from '../../../src/backends/local/index.js'
import type { Sandbox } from '../../../src/contract/sandbox.js'
import type { SandboxLifecycleEvent } from '../../../src/contract/sandbox-events.js'
import { HOST_SERVICES_NAME } from '../../../src/host/egress/allowed-hosts.js'
import type { EgressDecision } from '../../../src/host/egress/egress-decision.js'
import { CONNECT } from '../egress-guest-programs.js'
import { bwrapSkipReason } from './bwrap-available.js'
import { type ProxiedProvider, startProxiedProvider } from './proxied-provider.js'

const bwrapSkip = bwrapSkipReason()
const skip = bwrapSkip ?? (process.getuid?.() === 0 ? undefined : 'needs root (ip netns)')

async function node(sandbox: Sandbox, program: string, ...args: string[]): Promise<string> {
	const result = await sandbox.exec('node', ['-e', program, ...args], { timeout: 30_000 })
	return result.stdout.trim()
}

/** Every event the sandbox's stream holds, up to the end of one `exec('true')` run after them. */
async function eventsSoFar(sandbox: Sandbox): Promise<SandboxLifecycleEvent[]> {
	const events = sandbox.events?.({ replay: true })
	if (events === undefined) throw new Error('the sandbox has no events()')
	await sandbox.exec('true')
	const seen: SandboxLifecycleEvent[] = []
	for await (const event of events) {
		seen.push(event)
		if (event.type === 'exec-exited' && event.command === 'true') break
	}
	return seen
}

function echoServer(port: number): Promise<Server> {
	return new Promise((resolve, reject) => {
		const server = createServer((socket) => {
			socket.on('data', (chunk: Buffer) => socket.write(`host-${port}:${chunk}`))
			socket.on('error', () => socket.destroy())
		})
		server.once('error', reject)
		server.listen(port, '127.0.0.1', () => resolve(server))
	})
}

describe.skipIf(skip)('egress hostPorts on the local tier', () => {
	let provider: LocalSandboxProvider
	let fixture: ProxiedProvider | undefined
	const servers: Server[] = []
	const decisions: EgressDecision[] = []
	let port = 0

	beforeAll(async () => {
		fixture = await startProxiedProvider()
		provider = fixture.provider
		for (let tries = 0; tries < 20 && port === 0; tries++) {
			const candidate = 20_000 + Math.floor(Math.random() * 30_000)
			const first = await echoServer(candidate).catch(() => undefined)
			const next = first ? await echoServer(candidate + 1).catch(() => undefined) : undefined
			for (const server of [first, next]) if (server) servers.push(server)
			if (first && next) port = candidate
		}
	}, 120_000)

	afterAll(async () => {
		for (const server of servers) server.close()
		await fixture?.close()
	}, 120_000)

	it('reaches host port P through host.namzu.internal with hostPorts [P], and not P+1', async () => {
		const sandbox = await provider.create({
			egress: { kind: 'static', allowedHosts: ['api.example.test'], hostPorts: [port] },
			onEgressDecision: (decision) => decisions.push(decision),
		})
		try {
			expect(await node(sandbox, CONNECT, HOST_SERVICES_NAME, String(port), 'ping')).toBe(
				`reached host-${port}:ping`,
			)
			expect(decisions).toContainEqual(
				expect.objectContaining({
					host: HOST_SERVICES_NAME,
					port,
					verdict: 'allow',
					rule: `hostPorts:${port}`,
				}),
			)
			// P+1 is not a captured port: the namespace's guard drops it before any proxy sees it.
			const next = await node(sandbox, CONNECT, HOST_SERVICES_NAME, String(port + 1), 'ping')
			expect(next).not.toContain('reached')
			expect(decisions.filter((d) => d.verdict === 'allow' && d.port === port + 1)).toEqual([])
			// The sandbox's own loopback: nothing of the host's answers there.
			expect(await node(sandbox, CONNECT, '127.0.0.1', String(port), 'ping')).not.toContain(
				'reached',
			)
			// events() carries the same decisions the callback got, in order.
			const egress = (await eventsSoFar(sandbox)).filter((e) => e.type === 'egress-decision')
			expect(
				egress.map(({ host, port, verdict, layer, reason }) => ({
					host,
					port,
					verdict,
					layer,
					reason,
				})),
			).toEqual(
				decisions.map(({ host, port, verdict, layer, reason }) => ({
					host,
					port,
					verdict,
					layer,
					reason,
				})),
			)
			expect(egress).toContainEqual(
				expect.objectContaining({ host: HOST_SERVICES_NAME, port, verdict: 'allow' }),
			)
		} finally {
			await sandbox.destroy()
		}
	}, 120_000)

	it('without hostPorts, host.namzu.internal resolves to nothing reachable and the refusal is reported', async () => {
		const seen: EgressDecision[] = []
		const sandbox = await provider.create({
			egress: { kind: 'static', allowedHosts: ['api.example.test'] },
			onEgressDecision: (decision) => seen.push(decision),
		})
		try {
			expect(await node(sandbox, CONNECT, HOST_SERVICES_NAME, String(port), 'ping')).not.toContain(
				'reached',
			)
			expect(seen).toContainEqual(
				expect.objectContaining({ host: HOST_SERVICES_NAME, verdict: 'deny' }),
			)
			expect(await eventsSoFar(sandbox)).toContainEqual(
				expect.objectContaining({
					type: 'egress-decision',
					host: HOST_SERVICES_NAME,
					verdict: 'deny',
				}),
			)
		} finally {
			await sandbox.destroy()
		}
	}, 120_000)
})
