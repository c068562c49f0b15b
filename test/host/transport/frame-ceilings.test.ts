/**
 * The host's own frame ceiling applies to every reply and every stream, and a connection holds a
 * bounded queue, whatever a lying peer announces (a real socket, the real frame codec). Each case
 * announces one frame just past the ceiling that applies and is refused at the header, before the
 * host buffers it; positive controls show frames under the ceiling, and a queue the consumer
 * drains late, arrive whole.
 */
import { connect, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { RemoteProtocolError } from '../../../src/host/refusals/refusal-errors.js'
import { createAgentSandbox } from '../../../src/host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import {
	EXEC_STREAM_FRAME_LIMIT_BYTES,
	HOST_READ_FRAME_LIMIT_BYTES,
} from '../../../src/host/transport/agent-transport-options.js'
import { FrameChannel, QUEUE_HIGH_WATER_BYTES } from '../../../src/host/transport/frame-channel.js'
import { encodeFrame, STREAM_TERMINATOR } from '../../../src/wire/frame.js'
import { replyBoundsOf } from '../../../src/wire/reply-bounds.js'
import { type FakeAgent, type FakeHandler, reply, startFakeAgent } from '../fake-agent-server.js'

const fakes: FakeAgent[] = []
afterEach(async () => {
	for (const fake of fakes.splice(0)) await fake.close()
})

const RESERVATION = {
	ok: true,
	protocolVersion: 2,
	executionId: 'exec_0b6f3c2e-6a51-4c0e-9d55-8f1f3e3b6a10',
	leaseExpiresAt: Date.now() + 60_000,
}

/** The 9-byte header of a frame announcing `bytes`, and a little of its payload. */
function announce(socket: Socket, bytes: number): void {
	socket.write(`${bytes.toString(16).padStart(8, '0')}\n{"type":"`)
}

async function peer(handler: FakeHandler): Promise<AgentTransport> {
	const fake = await startFakeAgent(handler)
	fakes.push(fake)
	return new AgentTransport({ kind: 'unix', path: fake.path ?? '' }, { connectRetryBudgetMs: 0 })
}

function frameTooLarge(limit: number): RegExp {
	return new RegExp(`frame_too_large: announced ${limit + 1} bytes, limit ${limit}`)
}

describe('the host frame ceiling', () => {
	it('refuses a request-shaped reply announced past its op ceiling (list-files)', async () => {
		const limit = replyBoundsOf('list-files').frameBytes
		const transport = await peer((_request, socket) => announce(socket, limit + 1))
		const error = await transport.request('list-files', { path: '/' }).catch((caught) => caught)
		expect(error).toBeInstanceOf(RemoteProtocolError)
		expect((error as Error).message).toMatch(frameTooLarge(limit))
	})

	it('refuses a stream event announced past the ceiling (read-file-stream)', async () => {
		const limit = replyBoundsOf('read-file-stream').frameBytes
		const transport = await peer((_request, socket) => {
			socket.write(encodeFrame({ type: 'meta', sizeBytes: 1, offset: 0, length: 1 }))
			announce(socket, limit + 1)
		})
		const drain = async () => {
			for await (const _event of transport.stream('read-file-stream', { path: 'x' })) {
			}
		}
		await expect(drain()).rejects.toThrow(frameTooLarge(limit))
	})

	it('refuses a terminal that announces its ready past the ceiling', async () => {
		const limit = replyBoundsOf('terminal').frameBytes
		const transport = await peer((_request, socket) => announce(socket, limit + 1))
		await expect(transport.openTerminal({ cols: 80, rows: 24 })).rejects.toThrow(
			frameTooLarge(limit),
		)
	})

	it('never reads a frame above HOST_READ_FRAME_LIMIT_BYTES, whatever a call asks', async () => {
		const transport = await peer((_request, socket) =>
			announce(socket, HOST_READ_FRAME_LIMIT_BYTES + 1),
		)
		const error = await transport
			.request('read-file', { path: 'x' }, { maxFrameBytes: HOST_READ_FRAME_LIMIT_BYTES * 2 })
			.catch((caught) => caught)
		expect((error as Error).message).toMatch(frameTooLarge(HOST_READ_FRAME_LIMIT_BYTES))
	})

	it('holds an execute stream to the lower exec ceiling: one huge delta is a protocol error', async () => {
		const ops: string[] = []
		const transport = await peer((request, socket) => {
			ops.push(request.op)
			if (request.op === 'reserve-execution') return reply(socket, RESERVATION)
			if (request.op === 'execute') return announce(socket, EXEC_STREAM_FRAME_LIMIT_BYTES + 1)
			reply(socket, { ok: true, state: 'completed', started: true })
		})
		const sandbox = createAgentSandbox({
			id: 'ceiling',
			transport,
			rootDir: '/w',
			environment: 'linux-namespace',
			release: async () => {},
			execution: { cancelConfirmTimeoutMs: 300, resultDrainTimeoutMs: 100 },
		})
		try {
			const error = await sandbox.exec('x').catch((caught: unknown) => caught)
			// The stream failed after the run started: the host reconciles, then names the loss.
			expect((error as Error).cause).toBeInstanceOf(RemoteProtocolError)
			expect(((error as Error).cause as Error).message).toMatch(
				frameTooLarge(EXEC_STREAM_FRAME_LIMIT_BYTES),
			)
			expect(ops).toEqual(['reserve-execution', 'execute', 'cancel-execution'])
		} finally {
			await sandbox.destroy()
		}
	})

	it('positive control: a frame just under the exec ceiling arrives whole', async () => {
		const data = 'y'.repeat(EXEC_STREAM_FRAME_LIMIT_BYTES - 64)
		const transport = await peer((request, socket) => {
			if (request.op === 'reserve-execution') return reply(socket, RESERVATION)
			socket.write(encodeFrame({ type: 'stdout_delta', data }))
			socket.write(encodeFrame({ type: 'result', exitCode: 0, timedOut: false, durationMs: 1 }))
			socket.end(STREAM_TERMINATOR)
		})
		const sandbox = createAgentSandbox({
			id: 'ceiling-ok',
			transport,
			rootDir: '/w',
			environment: 'linux-namespace',
			release: async () => {},
		})
		try {
			const result = await sandbox.exec('x')
			expect(result.stdout.length).toBe(data.length)
			expect(result.stdoutTruncated).toBe(false)
		} finally {
			await sandbox.destroy()
		}
	})
})

describe('the channel queue', () => {
	it('pauses reading once the payload it holds passes the byte high-water, and loses nothing', async () => {
		const frame = encodeFrame({ type: 'data', data: 'z'.repeat(1024 * 1024) })
		const count = 20
		const fake = await startFakeAgent((_request, socket) => {
			// The peer writes every frame at once; the channel must stop reading long before.
			for (let i = 0; i < count; i++) socket.write(frame)
			socket.end(STREAM_TERMINATOR)
		})
		fakes.push(fake)
		const socket = connect(fake.path ?? '')
		await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
		const channel = new FrameChannel(socket, 'read-file-stream')
		channel.send({ op: 'read-file-stream' })
		await new Promise((resolve) => setTimeout(resolve, 300))
		expect(count * frame.length).toBeGreaterThan(2 * QUEUE_HIGH_WATER_BYTES)
		expect(channel.readingPaused).toBe(true)
		let frames = 0
		for (;;) {
			const item = await channel.read(5000)
			if (item.kind !== 'frame') {
				expect(item.kind).toBe('end')
				break
			}
			frames++
		}
		expect(frames).toBe(count)
		channel.destroy()
	})
})
