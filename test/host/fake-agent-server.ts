/**
 * A tiny in-test peer for pinning the host transport's own rules: it parses each connection's
 * first frame, records it (raw bytes included), and hands the socket to a scripted handler.
 * Listens on a unix socket or on 127.0.0.1 tcp. Not an agent: real behaviour is tested against
 * dist/agent.cjs.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { encodeFrame, parseFramePayload, STREAM_TERMINATOR } from '../../src/wire/frame.js'
import { FrameReader } from '../../src/wire/frame-reader.js'

export interface RecordedRequest {
	readonly op: string
	readonly body: Record<string, unknown>
	readonly token?: string
	/** The whole first frame exactly as it arrived, header included. */
	readonly raw: Buffer
}

export type FakeHandler = (request: RecordedRequest, socket: Socket, later: FrameSource) => void

/** Frames the client sends after its envelope (terminal input, tcp data). */
export interface FrameSource {
	onFrame(listener: (message: Record<string, unknown>) => void): void
}

export interface FakeAgent {
	readonly path?: string
	readonly port?: number
	readonly requests: RecordedRequest[]
	/** Connections accepted so far. */
	connections: number
	/** Most connections open at the same moment. */
	maxConcurrent: number
	close(): Promise<void>
}

export function reply(socket: Socket, message: object): void {
	socket.end(encodeFrame(message))
}

export function streamReply(socket: Socket, events: object[]): void {
	for (const event of events) socket.write(encodeFrame(event))
	socket.end(STREAM_TERMINATOR)
}

export function healthzReply(features: readonly string[], protocolVersion = 2): object {
	return { ok: true, protocolVersion, features }
}

export async function startFakeAgent(
	handler: FakeHandler,
	mode: 'unix' | 'tcp' = 'unix',
): Promise<FakeAgent> {
	const dir = await mkdtemp(join(tmpdir(), 'namzu-fake-agent-'))
	const sockets = new Set<Socket>()
	let open = 0
	const state: FakeAgent = {
		requests: [],
		connections: 0,
		maxConcurrent: 0,
		close: async () => {
			for (const socket of sockets) socket.destroy()
			await new Promise<void>((resolve) => server.close(() => resolve()))
			await rm(dir, { recursive: true, force: true })
		},
	}
	const server: Server = createServer((socket) => {
		sockets.add(socket)
		state.connections++
		open++
		state.maxConcurrent = Math.max(state.maxConcurrent, open)
		socket.on('close', () => {
			open--
			sockets.delete(socket)
		})
		socket.on('error', () => {})
		const reader = new FrameReader({ maxFrameBytes: 512 * 1024 * 1024, limitVariable: 'fake' })
		const listeners: Array<(message: Record<string, unknown>) => void> = []
		let received = Buffer.alloc(0)
		let dispatched = false
		socket.on('data', (chunk: Buffer) => {
			if (!dispatched) received = Buffer.concat([received, chunk])
			for (const item of reader.push(chunk)) {
				if (item.kind !== 'frame') continue
				const message = parseFramePayload(item.payload)
				if (dispatched) {
					for (const listener of listeners) listener(message)
					continue
				}
				dispatched = true
				const request: RecordedRequest = {
					op: String(message.op),
					body: (message.body ?? {}) as Record<string, unknown>,
					...(typeof message.token === 'string' ? { token: message.token } : {}),
					raw: received.subarray(0, 9 + item.payload.length),
				}
				state.requests.push(request)
				handler(request, socket, { onFrame: (listener) => listeners.push(listener) })
			}
		})
	})
	if (mode === 'unix') {
		const path = join(dir, 'fake.sock')
		await new Promise<void>((resolve) => server.listen(path, resolve))
		return Object.assign(state, { path })
	}
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
	const address = server.address()
	const port = typeof address === 'object' && address ? address.port : 0
	return Object.assign(state, { port })
}
