/**
 * Session reads and replays are bounded by the host's own limits (a lying peer on a real socket,
 * the real frame codec): a `readSession` reply above `maxBytes` is refused at its header, a chunk
 * longer than the offsets it claims and a read answered twice are protocol errors, and output a
 * guest floods into an attachment before anyone subscribes is held only up to `MAX_HELD_BYTES`.
 * Positive controls: an honest read, and an honest replay under the bound, arrive whole.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { RemoteProtocolError } from '../../../src/host/refusals/refusal-errors.js'
import { AgentSessions } from '../../../src/host/sessions/agent-sessions.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { MAX_HELD_BYTES } from '../../../src/host/transport/listener-set.js'
import { SESSIONS_FEATURE } from '../../../src/wire/features.js'
import { encodeFrame } from '../../../src/wire/frame.js'
import {
	type FakeAgent,
	type FakeHandler,
	healthzReply,
	reply,
	startFakeAgent,
	streamReply,
} from '../fake-agent-server.js'

const fakes: FakeAgent[] = []
afterEach(async () => {
	for (const fake of fakes.splice(0)) await fake.close()
})

async function sessionsOn(handler: FakeHandler): Promise<AgentSessions> {
	const fake = await startFakeAgent((request, socket, later) => {
		if (request.op === 'healthz') return reply(socket, healthzReply([SESSIONS_FEATURE]))
		handler(request, socket, later)
	})
	fakes.push(fake)
	const transport = new AgentTransport(
		{ kind: 'unix', path: fake.path ?? '' },
		{ connectRetryBudgetMs: 0 },
	)
	return new AgentSessions(transport)
}

function output(chunk: string, fromOffset: number, nextOffset: number): object {
	return {
		type: 'output',
		sessionId: 's1',
		chunk,
		fromOffset,
		nextOffset,
		droppedBytes: 0,
		status: 'running',
	}
}

describe('readSession', () => {
	it('refuses a reply above maxBytes at its header, before buffering it', async () => {
		const sessions = await sessionsOn((_request, socket) =>
			socket.write(`${(10 * 1024 * 1024).toString(16).padStart(8, '0')}\n{"type":"output"`),
		)
		const error = await sessions
			.readSession('s1', { maxBytes: 1024 * 1024 })
			.catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(RemoteProtocolError)
		expect((error as Error).message).toMatch(
			/frame_too_large: announced 10485760 bytes, limit 1048576/,
		)
	})

	it('refuses a chunk longer than the offsets it claims', async () => {
		const sessions = await sessionsOn((_request, socket) =>
			streamReply(socket, [output('x'.repeat(100), 0, 10)]),
		)
		await expect(sessions.readSession('s1')).rejects.toMatchObject({
			name: 'RemoteByteCountError',
			op: 'attach-session',
			expectedBytes: 10,
			receivedBytes: 100,
		})
	})

	it('refuses a read answered twice', async () => {
		const sessions = await sessionsOn((_request, socket) =>
			streamReply(socket, [output('ab', 0, 2), output('cd', 2, 4)]),
		)
		await expect(sessions.readSession('s1')).rejects.toThrow(/answered more than once/)
	})

	it('positive control: an honest read arrives', async () => {
		const sessions = await sessionsOn((_request, socket) =>
			streamReply(socket, [output('hello', 3, 8)]),
		)
		await expect(sessions.readSession('s1')).resolves.toMatchObject({
			chunk: 'hello',
			nextOffset: 8,
		})
	})
})

describe('an attachment flooded before anyone subscribes', () => {
	const CHUNK = 64 * 1024

	function flooding(chunks: number): FakeHandler {
		return (_request, socket) => {
			socket.write(
				encodeFrame({
					type: 'ready',
					sessionId: 's1',
					kind: 'detached',
					state: 'running',
					fromOffset: 0,
					droppedBytes: 0,
					nextOffset: 0,
				}),
			)
			for (let i = 0; i < chunks; i++) {
				const data = String(i % 10).repeat(CHUNK)
				socket.write(
					encodeFrame({
						type: 'data',
						stream: 'stdout',
						data,
						offset: i * CHUNK,
						nextOffset: (i + 1) * CHUNK,
					}),
				)
			}
		}
	}

	async function heldFor(chunks: number): Promise<{ held: string; nextOffset: number }> {
		const sessions = await sessionsOn(flooding(chunks))
		const terminal = await sessions.attachTerminal('s1')
		for (let i = 0; i < 100 && terminal.nextOffset < chunks * CHUNK; i++) {
			await new Promise((resolve) => setTimeout(resolve, 20))
		}
		let held = ''
		terminal.onData((chunk) => {
			held += chunk
		})
		const nextOffset = terminal.nextOffset
		await terminal.detach()
		return { held, nextOffset }
	}

	it('holds at most MAX_HELD_BYTES for the first subscriber: the most recent output', async () => {
		const chunks = 128 // 8 MiB
		const { held, nextOffset } = await heldFor(chunks)
		expect(nextOffset).toBe(chunks * CHUNK)
		expect(held.length).toBeLessThanOrEqual(MAX_HELD_BYTES)
		expect(held.length).toBeGreaterThan(0)
		expect(held.endsWith(String((chunks - 1) % 10).repeat(CHUNK))).toBe(true)
	})

	it('positive control: output under the bound is handed over whole', async () => {
		const { held } = await heldFor(4)
		expect(held).toBe(['0', '1', '2', '3'].map((digit) => digit.repeat(CHUNK)).join(''))
	})
})
