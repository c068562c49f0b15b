import { afterEach, describe, expect, it } from 'vitest'
import { SandboxError } from '../../../src/contract/errors.js'
import { listFilesThroughAgent } from '../../../src/host/files/agent-file-list.js'
import {
	AgentOpRefusedError,
	AgentUnauthorizedError,
	RemoteProtocolError,
} from '../../../src/host/refusals/refusal-errors.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { REMOTE_EXECUTION_PROTOCOL_VERSION } from '../../../src/host/transport/agent-transport-options.js'
import {
	AgentPreauthFrameTooLargeError,
	AgentReadTimeoutError,
} from '../../../src/host/transport/transport-errors.js'
import { AGENT_PROTOCOL_VERSION } from '../../../src/wire/features.js'
import { encodeFrame, FrameError, STREAM_TERMINATOR } from '../../../src/wire/frame.js'
import {
	type FakeAgent,
	type FakeHandler,
	healthzReply,
	reply,
	startFakeAgent,
} from '../fake-agent-server.js'

const fakes: FakeAgent[] = []
afterEach(async () => {
	for (const fake of fakes.splice(0)) await fake.close()
})

async function unixPeer(
	handler: FakeHandler,
): Promise<{ fake: FakeAgent; transport: AgentTransport }> {
	const fake = await startFakeAgent(handler)
	fakes.push(fake)
	const transport = new AgentTransport(
		{ kind: 'unix', path: fake.path ?? '' },
		{ connectRetryBudgetMs: 0 },
	)
	return { fake, transport }
}

describe('request-shaped replies', () => {
	it('resolves a single reply frame once the peer closes', async () => {
		const { transport } = await unixPeer((_request, socket) => reply(socket, { ok: true, n: 1 }))
		await expect(transport.request('list-files', { path: '/' })).resolves.toEqual({
			ok: true,
			n: 1,
		})
	})

	it('refuses a peer that sends two reply frames', async () => {
		const { transport } = await unixPeer((_request, socket) => {
			socket.write(encodeFrame({ ok: true }))
			socket.end(encodeFrame({ ok: true }))
		})
		await expect(transport.request('read-file', { path: 'a' })).rejects.toBeInstanceOf(
			RemoteProtocolError,
		)
	})

	it('refuses a peer that does not close within one second of its reply', async () => {
		const { transport } = await unixPeer((_request, socket) => {
			socket.write(encodeFrame({ ok: true }))
		})
		const error = await transport
			.request('read-file', { path: 'a' })
			.catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(RemoteProtocolError)
		expect((error as Error).message).toMatch(/did not close the connection within 1000 ms/)
	})

	it('refuses trailing bytes after the reply frame', async () => {
		const { transport } = await unixPeer((_request, socket) => {
			socket.end(Buffer.concat([encodeFrame({ ok: true }), Buffer.from('000')]))
		})
		await expect(transport.request('read-file', { path: 'a' })).rejects.toBeInstanceOf(
			RemoteProtocolError,
		)
	})

	it.each([
		['a header that is not hex', Buffer.from('zzzzzzzz\n{}'), 'bad_header'],
		['a length above the ceiling', Buffer.from('7fffffff\n'), 'frame_too_large'],
	] as const)(
		'a malformed frame (%s) reaches the caller as RemoteProtocolError, the FrameError only as its cause',
		async (_label, bytes, code) => {
			const { transport } = await unixPeer((_request, socket) => socket.end(bytes))
			const error = await transport
				.request('read-file', { path: 'a' })
				.catch((caught: unknown) => caught)
			expect(error).toBeInstanceOf(RemoteProtocolError)
			expect(error).toBeInstanceOf(SandboxError)
			expect((error as Error).cause).toBeInstanceOf(FrameError)
			expect((error as Error).cause).toMatchObject({ code })
		},
	)

	it('refuses a peer that closes without replying', async () => {
		const { transport } = await unixPeer((_request, socket) => socket.end())
		await expect(transport.request('read-file', { path: 'a' })).rejects.toBeInstanceOf(
			RemoteProtocolError,
		)
	})

	it('names a refusal, and an unauthorized one separately', async () => {
		const { transport } = await unixPeer((request, socket) =>
			reply(socket, { ok: false, error: request.op === 'list-files' ? 'unauthorized' : 'nope: x' }),
		)
		await expect(transport.call('list-files', { path: '/' })).rejects.toBeInstanceOf(
			AgentUnauthorizedError,
		)
		const refused = await transport
			.call('read-file', { path: 'a' })
			.catch((caught: unknown) => caught)
		expect(refused).toBeInstanceOf(AgentOpRefusedError)
		expect((refused as AgentOpRefusedError).guestError).toBe('nope: x')
	})

	it('fails a request the peer leaves silent for readIdleTimeoutMs', async () => {
		const fake = await startFakeAgent(() => {})
		fakes.push(fake)
		const transport = new AgentTransport(
			{ kind: 'unix', path: fake.path ?? '' },
			{ readIdleTimeoutMs: 150 },
		)
		await expect(transport.request('read-file', { path: 'a' })).rejects.toBeInstanceOf(
			AgentReadTimeoutError,
		)
	})
})

describe('stream-shaped replies', () => {
	it('yields events until the terminator', async () => {
		const { transport } = await unixPeer((_request, socket) => {
			socket.write(encodeFrame({ type: 'a' }))
			socket.write(encodeFrame({ type: 'b' }))
			socket.end(STREAM_TERMINATOR)
		})
		const seen: unknown[] = []
		for await (const event of transport.stream('read-file-stream', { path: 'x' }))
			seen.push(event.type)
		expect(seen).toEqual(['a', 'b'])
	})

	it('refuses data after the terminator', async () => {
		const { transport } = await unixPeer((_request, socket) => {
			socket.write(encodeFrame({ type: 'a' }))
			socket.end(Buffer.concat([STREAM_TERMINATOR, encodeFrame({ type: 'late' })]))
		})
		const consume = async () => {
			for await (const _event of transport.stream('read-file-stream', { path: 'x' })) {
				// drain
			}
		}
		await expect(consume()).rejects.toBeInstanceOf(RemoteProtocolError)
	})

	it('refuses a stream that closes before its terminator', async () => {
		const { transport } = await unixPeer((_request, socket) => {
			socket.end(encodeFrame({ type: 'a' }))
		})
		const consume = async () => {
			for await (const _event of transport.stream('read-file-stream', { path: 'x' })) {
				// drain
			}
		}
		await expect(consume()).rejects.toBeInstanceOf(RemoteProtocolError)
	})
})

describe('healthz', () => {
	it('keeps the guest wire protocol version at 2', () => {
		expect(REMOTE_EXECUTION_PROTOCOL_VERSION).toBe(2)
		expect(AGENT_PROTOCOL_VERSION).toBe(2)
	})

	it.each([
		[
			'a newer protocol version',
			{ ok: true, protocolVersion: 3, features: [] },
			/rebuild the guest/,
		],
		['an older protocol version', { ok: true, protocolVersion: 1 }, /rebuild the guest/],
		['ok false', { ok: false, protocolVersion: 2, retiring: true }, /retiring/],
		['a non-list features field', { ok: true, protocolVersion: 2, features: 'all' }, /features/],
	])('refuses %s with RemoteProtocolError', async (_name, answer, message) => {
		const { transport } = await unixPeer((_request, socket) => reply(socket, answer))
		const error = await transport.healthz().catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(RemoteProtocolError)
		expect((error as Error).message).toMatch(message)
	})

	it('reads features once per transport', async () => {
		const { fake, transport } = await unixPeer((_request, socket) =>
			reply(socket, healthzReply(['write-file-parts'])),
		)
		expect([...(await transport.features())]).toEqual(['write-file-parts'])
		expect([...(await transport.features())]).toEqual(['write-file-parts'])
		expect(fake.requests.filter((request) => request.op === 'healthz')).toHaveLength(1)
	})
})

describe('tcp handles', () => {
	it('adds the handle token to every envelope', async () => {
		const fake = await startFakeAgent((request, socket) => {
			if (request.op === 'healthz') reply(socket, healthzReply([]))
			else reply(socket, { ok: true, entries: [] })
		}, 'tcp')
		fakes.push(fake)
		const transport = new AgentTransport({
			kind: 'tcp',
			host: '127.0.0.1',
			port: fake.port ?? 0,
			token: 'sekret-token',
		})
		await transport.healthz()
		await listFilesThroughAgent(transport, '/w')
		// healthz, the features listFiles reads, list-files.
		expect(fake.requests.map((request) => request.token)).toEqual([
			'sekret-token',
			'sekret-token',
			'sekret-token',
		])
	})

	it('refuses an envelope above the 8 MiB pre-auth limit before dialing', async () => {
		const fake = await startFakeAgent(() => {}, 'tcp')
		fakes.push(fake)
		const dials: unknown[] = []
		const transport = new AgentTransport(
			{ kind: 'tcp', host: '127.0.0.1', port: fake.port ?? 0, token: 't' },
			{ onDial: (event) => dials.push(event) },
		)
		const error = await transport
			.request('read-file', { path: 'x'.repeat(9 * 1024 * 1024) })
			.catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(AgentPreauthFrameTooLargeError)
		expect((error as AgentPreauthFrameTooLargeError).limitBytes).toBe(8 * 1024 * 1024)
		expect((error as Error).message).not.toContain('t"')
		expect(dials).toEqual([])
		expect(fake.connections).toBe(0)
	})
})
