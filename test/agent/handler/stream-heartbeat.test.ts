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

/**
 * The interval of the tests that show a stream staying alive: its three-interval silence limit
 * (3 s) is far above any stall a loaded machine puts between two writes of this side, and each
 * such test keeps going past the limit, so a slow machine only makes it longer.
 */
const LIVE_MS = 1000
const SILENCE_SPAN_MS = 3.5 * LIVE_MS
/** Bound on waiting for an event that comes (a process gone, a socket ended): generous, shared machine. */
const WAIT_MS = 60_000

const SHELL = { command: '/bin/sh', args: ['-c', 'echo PID=$$; exec sleep 30'], cols: 80, rows: 24 }

describe('stream heartbeat, guest side', { timeout: 120_000 }, () => {
	it('advertises stream-heartbeat in healthz features with the protocol version unchanged', async () => {
		const health = await agent.request('healthz')
		expect(health.features).toContain('stream-heartbeat')
		expect(health.protocolVersion).toBe(2)
	})

	it('echoes the requested interval in ready, then sends { type: heartbeat } frames', async () => {
		// This side sends nothing: the interval must leave the agent time to beat before it cuts.
		const stream = open('terminal', { ...SHELL, heartbeatMs: LIVE_MS })
		const ready = await stream.waitFor((event) => event.type === 'ready')
		expect(ready.heartbeatMs).toBe(LIVE_MS)
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
		await waitUntil(async () => !(await isAlive(pid)), WAIT_MS)
	})

	it('keeps a stream whose peer sends heartbeats', async () => {
		const stream = open('terminal', { ...SHELL, heartbeatMs: LIVE_MS })
		await stream.waitFor((event) => event.type === 'ready')
		const readyAt = performance.now()
		while (performance.now() - readyAt < SILENCE_SPAN_MS) {
			stream.send({ type: 'heartbeat' })
			await delay(LIVE_MS / 4)
		}
		expect(isClosed(stream)).toBe(false)
	})

	it('counts bytes, not frames: a frame arriving a byte at a time keeps the stream alive', async () => {
		const stream = open('terminal', { ...SHELL, heartbeatMs: LIVE_MS })
		await stream.waitFor((event) => event.type === 'ready')
		const readyAt = performance.now()
		const frame = encodeFrame({ type: 'input', data: 'x'.repeat(40) })
		let index = 0
		// Never the whole frame: a slow machine only drips fewer bytes over the same span.
		while (performance.now() - readyAt < SILENCE_SPAN_MS && index < frame.length - 1) {
			stream.socket.write(frame.subarray(index, index + 1))
			index++
			await delay(LIVE_MS / 4)
		}
		expect(isClosed(stream)).toBe(false)
		stream.socket.write(frame.subarray(index))
		await delay(60)
		expect(isClosed(stream)).toBe(false)
	})

	it('cuts a silent tcp-connect peer and closes the upstream connection', async () => {
		const stream = open('tcp-connect', { port: upstreamPort, heartbeatMs: 100 })
		expect((await stream.waitFor((event) => event.type === 'ready')).heartbeatMs).toBe(100)
		await stream.closed()
		await waitUntil(
			() => upstreamSockets.length === 1 && upstreamSockets[0]?.readableEnded === true,
			WAIT_MS,
		)
	})

	it('does not count the time it paused reading for backpressure as silence', async () => {
		const stream = open('tcp-connect', { port: upstreamPort, heartbeatMs: LIVE_MS })
		await stream.waitFor((event) => event.type === 'ready')
		await waitUntil(() => upstreamSockets.length === 1, WAIT_MS)
		const target = upstreamSockets[0]
		target?.pause()
		// Far more than the loopback buffers hold: the agent stops reading this connection.
		// Encoded once, so this side never stalls (and goes silent) building 48 frames.
		const frame = encodeFrame({
			type: 'data',
			data: Buffer.alloc(1024 * 1024, 7).toString('base64'),
		})
		for (let part = 0; part < 48; part++) stream.socket.write(frame)
		await waitUntil(() => stream.socket.writableLength > 0, WAIT_MS)
		await delay(SILENCE_SPAN_MS)
		expect(isClosed(stream)).toBe(false)
		// Reading again, the agent drains everything, then hears nothing: three intervals later, cut.
		target?.resume()
		await stream.closed()
		expect(stream.socket.writableLength).toBe(0)
	})
})
