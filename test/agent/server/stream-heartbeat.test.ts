/**
 * The guest's half of the stream heartbeat against the real agent, with a raw socket as the host:
 * the echo and its floor, heartbeats only after `ready` and only when asked, a silent peer cut
 * after three intervals with the stream's own cleanup, and what does not count as silence — a
 * frame still arriving byte by byte, and time the agent spent not reading for backpressure.
 */
import { createServer, type Server, type Socket } from 'node:net'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { encodeFrame } from '../../../src/wire/frame.js'
import { type AgentStream, openAgentStream } from '../agent-stream.js'
import {
	delay,
	isAlive,
	type LifecycleAgent,
	startLifecycleAgent,
	waitUntil,
} from '../lifecycle/lifecycle-agent.js'

let agent: LifecycleAgent
let upstream: Server
let upstreamPort: number
let upstreamSockets: Socket[]
const streams: AgentStream[] = []

beforeEach(async () => {
	agent = await startLifecycleAgent()
	upstreamSockets = []
	upstream = createServer((socket) => {
		upstreamSockets.push(socket)
		socket.on('error', () => undefined)
	})
	await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
	const address = upstream.address()
	upstreamPort = typeof address === 'object' && address ? address.port : 0
})

afterEach(async () => {
	for (const stream of streams.splice(0)) stream.close()
	for (const socket of upstreamSockets) socket.destroy()
	await new Promise((resolve) => upstream.close(resolve))
	await agent.stop()
})

function open(op: string, body: object): AgentStream {
	const stream = openAgentStream({ socketPath: agent.socketPath }, { op, body })
	streams.push(stream)
	return stream
}

function isClosed(stream: AgentStream): boolean {
	return stream.socket.destroyed || stream.socket.readableEnded
}

const SHELL = { command: '/bin/sh', args: ['-c', 'echo PID=$$; exec sleep 30'], cols: 80, rows: 24 }

describe('stream heartbeat, guest side', () => {
	it('advertises stream-heartbeat in healthz features with the protocol version unchanged', async () => {
		const health = await agent.request('healthz')
		expect(health.features).toContain('stream-heartbeat')
		expect(health.protocolVersion).toBe(2)
	})

	it('echoes the requested interval in ready, then sends { type: heartbeat } frames', async () => {
		const stream = open('terminal', { ...SHELL, heartbeatMs: 150 })
		const ready = await stream.waitFor((event) => event.type === 'ready')
		expect(ready.heartbeatMs).toBe(150)
		await stream.waitFor((event) => event.type === 'heartbeat')
		const readyIndex = stream.events.indexOf(ready)
		const firstBeat = stream.events.findIndex((event) => event.type === 'heartbeat')
		expect(firstBeat).toBeGreaterThan(readyIndex)
		expect(stream.events[firstBeat]).toEqual({ type: 'heartbeat' })
	})

	it('raises a requested interval below 100 ms to 100 before echoing it', async () => {
		const stream = open('terminal', { ...SHELL, heartbeatMs: 10 })
		expect((await stream.waitFor((event) => event.type === 'ready')).heartbeatMs).toBe(100)
	})

	it('without heartbeatMs, echoes nothing, sends no heartbeat and never cuts a quiet stream', async () => {
		const stream = open('terminal', SHELL)
		const ready = await stream.waitFor((event) => event.type === 'ready')
		expect(ready).not.toHaveProperty('heartbeatMs')
		await delay(700)
		expect(stream.events.some((event) => event.type === 'heartbeat')).toBe(false)
		expect(isClosed(stream)).toBe(false)
	})

	it('cuts a terminal whose peer went silent for three intervals and tears its processes down', async () => {
		const stream = open('terminal', { ...SHELL, heartbeatMs: 100 })
		await stream.waitFor((event) => event.type === 'ready')
		const readyAt = performance.now()
		const data = await stream.waitFor(
			(event) => event.type === 'data' && /PID=\d+/.test(String(event.data)),
		)
		const pid = Number(/PID=(\d+)/.exec(String(data.data))?.[1])
		await stream.closed()
		// Three whole intervals at least (less the time ready spent in transit).
		expect(performance.now() - readyAt).toBeGreaterThanOrEqual(250)
		await waitUntil(async () => !(await isAlive(pid)))
	})

	it('keeps a stream whose peer sends heartbeats', async () => {
		const stream = open('terminal', { ...SHELL, heartbeatMs: 100 })
		await stream.waitFor((event) => event.type === 'ready')
		for (let beat = 0; beat < 10; beat++) {
			stream.send({ type: 'heartbeat' })
			await delay(80)
		}
		expect(isClosed(stream)).toBe(false)
	})

	it('counts bytes, not frames: a frame arriving a byte at a time keeps the stream alive', async () => {
		const stream = open('terminal', { ...SHELL, heartbeatMs: 100 })
		await stream.waitFor((event) => event.type === 'ready')
		const frame = encodeFrame({ type: 'input', data: 'x'.repeat(40) })
		for (let index = 0; index < 14; index++) {
			stream.socket.write(frame.subarray(index, index + 1))
			await delay(60)
		}
		expect(isClosed(stream)).toBe(false)
		stream.socket.write(frame.subarray(14))
		await delay(60)
		expect(isClosed(stream)).toBe(false)
	})

	it('cuts a silent tcp-connect peer and closes the upstream connection', async () => {
		const stream = open('tcp-connect', { port: upstreamPort, heartbeatMs: 100 })
		expect((await stream.waitFor((event) => event.type === 'ready')).heartbeatMs).toBe(100)
		await stream.closed()
		await waitUntil(
			() => upstreamSockets.length === 1 && upstreamSockets[0]?.readableEnded === true,
		)
	})

	it('does not count the time it paused reading for backpressure as silence', async () => {
		const stream = open('tcp-connect', { port: upstreamPort, heartbeatMs: 100 })
		await stream.waitFor((event) => event.type === 'ready')
		await waitUntil(() => upstreamSockets.length === 1)
		const target = upstreamSockets[0]
		target?.pause()
		// Far more than the loopback buffers hold: the agent stops reading this connection.
		// Encoded once, so this side never stalls (and goes silent) building 48 frames.
		const frame = encodeFrame({
			type: 'data',
			data: Buffer.alloc(1024 * 1024, 7).toString('base64'),
		})
		for (let part = 0; part < 48; part++) stream.socket.write(frame)
		await waitUntil(() => stream.socket.writableLength > 0)
		await delay(900)
		expect(isClosed(stream)).toBe(false)
		// Reading again, the agent drains everything, then hears nothing: three intervals later, cut.
		target?.resume()
		await stream.closed()
		expect(stream.socket.writableLength).toBe(0)
	})
})
