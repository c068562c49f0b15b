import { createServer, type Server, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { rawRequest } from '../../helpers/raw-agent-client.js'
import { openAgentStream } from '../agent-stream.js'

let agent: StartedAgent
let echo: Server
let echoPort: number
let accepted = 0

beforeAll(async () => {
	agent = await startAgent()
	// The agent runs unsandboxed here, so it shares this host's loopback.
	echo = createServer({ allowHalfOpen: true }, (socket: Socket) => {
		accepted++
		socket.pipe(socket)
	})
	await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve))
	const address = echo.address()
	if (address === null || typeof address === 'string') throw new Error('no port')
	echoPort = address.port
})
afterAll(async () => {
	await new Promise((resolve) => echo?.close(resolve))
	await agent?.stop()
})

function decode(events: Record<string, unknown>[]): Buffer {
	return Buffer.concat(
		events
			.filter((event) => event.type === 'data')
			.map((event) => Buffer.from(String(event.data), 'base64')),
	)
}

describe('tcp-connect', () => {
	it('pipes bytes to a loopback listener and back, then ends on upstream EOF', async () => {
		const stream = openAgentStream(agent, { op: 'tcp-connect', body: { port: echoPort } })
		await stream.waitFor((event) => event.type === 'ready')
		const payload = Buffer.from([0, 1, 2, 250, 255, 10, 13])
		stream.send({ type: 'data', data: payload.toString('base64') })
		stream.send({ type: 'data', data: Buffer.from('more').toString('base64') })
		// Half-close upstream: the echo server ends its side once it has echoed everything.
		stream.send({ type: 'end' })
		await stream.waitFor((event) => event.type === 'end')
		await stream.closed()
		expect(decode(stream.events).equals(Buffer.concat([payload, Buffer.from('more')]))).toBe(true)
		expect(stream.terminated()).toBe(true)
		expect(stream.events[0]).toEqual({ type: 'ready', guestBootId: expect.any(String) })
	})

	it('carries a large transfer intact in both directions under backpressure', async () => {
		const stream = openAgentStream(agent, { op: 'tcp-connect', body: { port: echoPort } })
		await stream.waitFor((event) => event.type === 'ready')
		const chunk = Buffer.alloc(1024 * 1024)
		for (let index = 0; index < chunk.length; index++) chunk[index] = index % 251
		for (let part = 0; part < 8; part++) {
			stream.send({ type: 'data', data: chunk.toString('base64') })
		}
		stream.send({ type: 'end' })
		await stream.waitFor((event) => event.type === 'end', 20_000)
		const received = decode(stream.events)
		expect(received.length).toBe(8 * chunk.length)
		expect(received.equals(Buffer.concat(Array.from({ length: 8 }, () => chunk)))).toBe(true)
		stream.close()
	})

	it('refuses a non-loopback host with invalid_loopback_target and never dials it', async () => {
		const before = accepted
		const exchange = await rawRequest(agent, {
			op: 'tcp-connect',
			body: { host: '10.0.0.1', port: echoPort },
		})
		expect(exchange.frames).toEqual([{ type: 'error', error: 'invalid_loopback_target' }])
		expect(exchange.terminated).toBe(true)
		expect(accepted).toBe(before)
	})

	it('refuses an out-of-range port with invalid_loopback_target', async () => {
		const exchange = await rawRequest(agent, { op: 'tcp-connect', body: { port: 70000 } })
		expect(exchange.frames).toEqual([{ type: 'error', error: 'invalid_loopback_target' }])
	})

	it('reports a refused connection as an error event, then the terminator', async () => {
		const closed = createServer()
		await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
		const address = closed.address()
		if (address === null || typeof address === 'string') throw new Error('no port')
		await new Promise((resolve) => closed.close(resolve))
		const exchange = await rawRequest(agent, {
			op: 'tcp-connect',
			body: { host: '127.0.0.1', port: address.port },
		})
		expect(exchange.frames).toHaveLength(1)
		expect(exchange.frames[0]?.type).toBe('error')
		expect(String(exchange.frames[0]?.error)).toContain('ECONNREFUSED')
		expect(exchange.terminated).toBe(true)
	})

	it('tears the upstream connection down on destroy', async () => {
		let upstreamClosed: Promise<void> = Promise.resolve()
		const server = createServer((socket) => {
			upstreamClosed = new Promise((resolve) => socket.once('close', () => resolve()))
			socket.on('error', () => undefined)
		})
		await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
		const address = server.address()
		if (address === null || typeof address === 'string') throw new Error('no port')
		const stream = openAgentStream(agent, { op: 'tcp-connect', body: { port: address.port } })
		await stream.waitFor((event) => event.type === 'ready')
		stream.send({ type: 'destroy' })
		await stream.closed()
		await upstreamClosed
		expect(stream.terminated()).toBe(true)
		await new Promise((resolve) => server.close(resolve))
	})
})
