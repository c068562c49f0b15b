/**
 * The host's half of the stream heartbeat: what the open request carries, when heartbeats start,
 * which echoes are honoured, a silent guest ending the session exactly as a closed socket does,
 * and a host paused for backpressure not counting the guest's silence. In-test guests pin the
 * rules; the real agent shows a quiet-but-alive terminal survives through `createAgentSandbox`.
 */
import type { Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { createAgentSandbox } from '../../../src/host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { encodeFrame } from '../../../src/wire/frame.js'
import { startAgent } from '../../helpers/agent-process.js'
import { type FakeAgent, type RecordedRequest, startFakeAgent } from '../fake-agent-server.js'

let fake: FakeAgent | undefined
const cleanups: Array<() => Promise<unknown> | unknown> = []

afterEach(async () => {
	// The in-test guest first: its sockets closing lets each session's close() return at once.
	await fake?.close()
	fake = undefined
	for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

function delay(ms: number): Promise<void> {
	return new Promise((resolve) => setTimeout(resolve, ms))
}

interface SilentGuest {
	readonly fake: FakeAgent
	/** Frames the host sent after its envelope, per connection. */
	readonly received: Array<Record<string, unknown>[]>
	readonly sockets: Socket[]
}

/** Answers `ready` (echoing `echo(requested)` when it returns a value) and then says nothing. */
async function silentGuest(echo: (requested: unknown) => unknown): Promise<SilentGuest> {
	const received: Array<Record<string, unknown>[]> = []
	const sockets: Socket[] = []
	fake = await startFakeAgent((request: RecordedRequest, socket, later) => {
		const frames: Record<string, unknown>[] = []
		received.push(frames)
		sockets.push(socket)
		later.onFrame((message) => frames.push(message))
		const heartbeatMs = echo(request.body.heartbeatMs)
		socket.write(
			encodeFrame({ type: 'ready', ...(heartbeatMs === undefined ? {} : { heartbeatMs }) }),
		)
	})
	return { fake, received, sockets }
}

function transportFor(guest: SilentGuest, streamHeartbeatMs?: number): AgentTransport {
	return new AgentTransport(
		{ kind: 'unix', path: guest.fake.path ?? '' },
		streamHeartbeatMs === undefined ? {} : { streamHeartbeatMs },
	)
}

const TERMINAL = { cols: 80, rows: 24 }

describe('stream heartbeat, host side', () => {
	it('a transport asks for no stream heartbeat unless told to', () => {
		const transport = new AgentTransport({ kind: 'unix', path: '/nonexistent' })
		expect(transport.options.streamHeartbeatMs).toBeUndefined()
		const zero = new AgentTransport({ kind: 'unix', path: '/x' }, { streamHeartbeatMs: 0 })
		expect(zero.options.streamHeartbeatMs).toBeUndefined()
		const asking = new AgentTransport({ kind: 'unix', path: '/x' }, { streamHeartbeatMs: 500 })
		expect(asking.options.streamHeartbeatMs).toBe(500)
	})

	it('asks for the configured interval in the open request, and for none by default', async () => {
		const guest = await silentGuest(() => undefined)
		const asking = await transportFor(guest, 250).openTerminal(TERMINAL)
		const quiet = await transportFor(guest).openTcpConnection({ port: 80 })
		cleanups.push(
			() => asking.close(),
			() => quiet.close(),
		)
		expect(guest.fake.requests[0]?.body.heartbeatMs).toBe(250)
		expect(guest.fake.requests[1]?.body).not.toHaveProperty('heartbeatMs')
	})

	it('without an echo, sends no heartbeat and never ends a silent stream', async () => {
		const guest = await silentGuest(() => undefined)
		const session = await transportFor(guest, 100).openTerminal(TERMINAL)
		cleanups.push(() => session.close())
		let exited = false
		void session.exited.then(() => {
			exited = true
		})
		await delay(600)
		expect(exited).toBe(false)
		expect(guest.received[0]).toEqual([])
	})

	it('after an echo, sends { type: heartbeat } and ends a silent terminal with exitCode -1', async () => {
		const guest = await silentGuest((requested) => requested)
		const session = await transportFor(guest, 100).openTerminal(TERMINAL)
		const openedAt = performance.now()
		expect(await session.exited).toEqual({ exitCode: -1 })
		expect(performance.now() - openedAt).toBeGreaterThanOrEqual(290)
		expect(guest.received[0]?.length).toBeGreaterThan(0)
		expect(guest.received[0]?.every((frame) => frame.type === 'heartbeat')).toBe(true)
	})

	it('ends a silent tcp connection: closed resolves', async () => {
		const guest = await silentGuest((requested) => requested)
		const connection = await transportFor(guest, 100).openTcpConnection({ port: 80 })
		await connection.closed
		expect(guest.received[0]?.[0]).toEqual({ type: 'heartbeat' })
	})

	it('honours an echo raised to the 100 ms floor', async () => {
		const guest = await silentGuest(() => 100)
		const session = await transportFor(guest, 40).openTerminal(TERMINAL)
		expect(await session.exited).toEqual({ exitCode: -1 })
	})

	it.each([
		['below the floor', 50],
		['above four times the request', 401],
		['not a number', '100'],
	])('never times its watchdog with an echo %s', async (_label, echoed) => {
		const guest = await silentGuest(() => echoed)
		const session = await transportFor(guest, 100).openTerminal(TERMINAL)
		cleanups.push(() => session.close())
		let exited = false
		void session.exited.then(() => {
			exited = true
		})
		await delay(600)
		expect(exited).toBe(false)
		expect(guest.received[0]).toEqual([])
	})

	it('any byte counts as life: a guest dribbling one frame keeps the stream open', async () => {
		const guest = await silentGuest((requested) => requested)
		const session = await transportFor(guest, 100).openTerminal(TERMINAL)
		cleanups.push(() => session.close())
		const frame = encodeFrame({ type: 'data', data: 'y'.repeat(40) })
		let exited = false
		void session.exited.then(() => {
			exited = true
		})
		for (let index = 0; index < 14; index++) {
			guest.sockets[0]?.write(frame.subarray(index, index + 1))
			await delay(60)
		}
		expect(exited).toBe(false)
	})

	it('does not count silence while the host has paused reading for backpressure', async () => {
		const guest = await silentGuest((requested) => requested)
		const connection = await transportFor(guest, 100).openTcpConnection({ port: 80 })
		let closed = false
		void connection.closed.then(() => {
			closed = true
		})
		connection.pause()
		await delay(700)
		expect(closed).toBe(false)
		connection.resume()
		await connection.closed
	})

	it('a quiet terminal on the real agent stays open while both sides heartbeat', async () => {
		const agent = await startAgent()
		cleanups.push(() => agent.stop())
		const sandbox = createAgentSandbox({
			id: 'heartbeat',
			transport: new AgentTransport(
				{ kind: 'unix', path: agent.socketPath ?? '' },
				{ streamHeartbeatMs: 100 },
			),
			rootDir: agent.workspace,
			environment: 'linux-namespace',
			release: async () => {},
		})
		cleanups.push(() => sandbox.destroy())
		const session = await sandbox.openTerminal({
			command: '/bin/sh',
			args: ['-c', 'exec sleep 30'],
			size: TERMINAL,
		})
		let exited = false
		void session.exited.then(() => {
			exited = true
		})
		await delay(800)
		expect(exited).toBe(false)
	})
})
