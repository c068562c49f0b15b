/**
 * What one connection may cost the host, over real sockets: the head deadline (a trickle keeps no
 * setup alive), the idle timeout of an open tunnel, and the per-sandbox and host-wide caps on open
 * tunnels, each refused by name. Timeouts are configured tiny; nothing here measures speed.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { connect as netConnect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseAllowedHosts } from '../../../src/host/egress/allowed-hosts.js'
import type { EgressDecision } from '../../../src/host/egress/egress-decision.js'
import {
	type EgressProxy,
	type EgressProxyOptions,
	startEgressProxy,
} from '../../../src/host/egress/egress-proxy.js'
import { TunnelBudget } from '../../../src/host/egress/tunnel-budget.js'
import { bridge, readAll, until } from './egress-test-kit.js'
import { type EgressUpstream, startEgressUpstream } from './upstream-fixture.js'

const skip = process.getuid?.() === 0 ? undefined : 'needs root (ip netns)'
const RAW = 'CONNECT api.example.test:5432 HTTP/1.1\r\n\r\n'

/** Resolves once `socket` closed. */
function closed(socket: Socket): Promise<void> {
	return new Promise((resolve) => {
		if (socket.destroyed) resolve()
		else socket.once('close', () => resolve())
	})
}

describe.skipIf(skip)('egress proxy bounds', () => {
	let upstream: EgressUpstream
	let dir: string
	const proxies: EgressProxy[] = []
	const sockets: Socket[] = []
	const decisions: EgressDecision[] = []

	async function proxy(extra: Partial<EgressProxyOptions> = {}): Promise<EgressProxy> {
		const started = await startEgressProxy({
			socketPath: join(dir, `proxy-${proxies.length}.sock`),
			rules: parseAllowedHosts(['api.example.test', 'tcp://api.example.test:5432']),
			lookup: upstream.lookup,
			onDecision: (decision) => decisions.push(decision),
			...extra,
		})
		proxies.push(started)
		return started
	}

	/** A raw tunnel that answered `200` and echoes. */
	async function openRaw(started: EgressProxy): Promise<Socket> {
		const { socket, reply } = await bridge(started.socketPath, RAW)
		expect(reply).toBe('HTTP/1.1 200 Connection Established')
		sockets.push(socket)
		return socket
	}

	beforeAll(async () => {
		upstream = await startEgressUpstream()
		dir = await mkdtemp(join(tmpdir(), 'namzu-egress-bounds-'))
	})

	afterAll(async () => {
		for (const socket of sockets) socket.destroy()
		for (const started of proxies) await started.close()
		await upstream?.close()
		if (dir) await rm(dir, { recursive: true, force: true })
	})

	it('a head trickled forever is cut at the head deadline, however active, and reported', async () => {
		const started = await proxy({ headTimeoutMs: 300 })
		const { socket } = await bridge(
			started.socketPath,
			'CONNECT api.example.test:80 HTTP/1.1\r\n\r\n',
		)
		socket.write('GET / HTTP/1.1\r\nX-Slow: ')
		const trickle = setInterval(() => socket.write('a'), 20)
		await closed(socket)
		clearInterval(trickle)
		expect(decisions.at(-1)).toMatchObject({
			host: 'api.example.test',
			port: 80,
			verdict: 'deny',
			layer: 'http',
			reason: 'head-timeout',
		})
		await until(() => started.connectionCount() === 0)
	})

	it('a bridge request never finished is cut at the head deadline too', async () => {
		const started = await proxy({ headTimeoutMs: 300 })
		const socket = netConnect(started.socketPath)
		socket.on('error', () => undefined)
		socket.write('CONNECT api.exa')
		const trickle = setInterval(() => socket.write('a'), 20)
		await closed(socket)
		clearInterval(trickle)
		expect(decisions.at(-1)).toMatchObject({
			verdict: 'deny',
			layer: 'connect',
			reason: 'head-timeout',
		})
	})

	it('the head deadline ends with the setup: an open tunnel outlives it (positive control)', async () => {
		const started = await proxy({ headTimeoutMs: 300 })
		const socket = await openRaw(started)
		const answer = new Promise<string>((resolve) =>
			socket.once('data', (data: Buffer) => resolve(String(data))),
		)
		socket.write('first')
		expect(await answer).toBe('first')
		// Well past the head deadline, the tunnel still carries bytes both ways.
		await new Promise((resolve) => setTimeout(resolve, 900))
		const later = new Promise<string>((resolve) =>
			socket.once('data', (data: Buffer) => resolve(String(data))),
		)
		socket.write('later')
		expect(await later).toBe('later')
		socket.destroy()
	})

	it('an open tunnel silent both ways is closed after the idle timeout; one that talks is not', async () => {
		const started = await proxy({ idleTimeoutMs: 2000 })
		const silent = await openRaw(started)
		const talking = await openRaw(started)
		let echoed = ''
		talking.on('data', (data: Buffer) => {
			echoed += String(data)
		})
		let talkingClosed = false
		talking.once('close', () => {
			talkingClosed = true
		})
		const talk = setInterval(() => talking.write('.'), 100)
		silent.write('once')
		await closed(silent)
		// The silent one went; the one that kept talking all along is still open.
		clearInterval(talk)
		expect(talkingClosed).toBe(false)
		talking.end('still here')
		await closed(talking)
		expect(echoed.endsWith('still here')).toBe(true)
	})

	it('refuses the tunnel past the per-sandbox cap by name, and takes one again after a close', async () => {
		const started = await proxy({ maxTunnels: 3 })
		const open = [await openRaw(started), await openRaw(started), await openRaw(started)]
		const refused = await bridge(started.socketPath, RAW)
		expect(refused.reply).toBe('HTTP/1.1 503 Service Unavailable')
		expect(decisions.at(-1)).toEqual({
			host: '',
			port: 0,
			verdict: 'deny',
			layer: 'connect',
			reason: 'tunnel-limit',
		})
		await readAll(refused.socket)
		const first = open[0]
		if (first === undefined) throw new Error('no tunnel')
		first.destroy()
		await until(() => started.connectionCount() === 4)
		await openRaw(started)
	})

	it('refuses a tunnel past the host-wide cap, shared by every proxy, by name', async () => {
		const host = new TunnelBudget(4)
		const one = await proxy({ maxTunnels: 3, hostTunnels: host })
		const two = await proxy({ maxTunnels: 3, hostTunnels: host })
		const held = [await openRaw(one), await openRaw(one), await openRaw(one), await openRaw(two)]
		expect(host.inUse).toBe(4)
		const refused = await bridge(two.socketPath, RAW)
		expect(refused.reply).toBe('HTTP/1.1 503 Service Unavailable')
		expect(decisions.at(-1)).toMatchObject({ layer: 'connect', reason: 'host-tunnel-limit' })
		await readAll(refused.socket)
		// The refused connection took nothing from either budget.
		expect(host.inUse).toBe(4)
		held[0]?.destroy()
		await until(() => host.inUse === 3)
		await openRaw(two)
		expect(host.inUse).toBe(4)
	})
})
