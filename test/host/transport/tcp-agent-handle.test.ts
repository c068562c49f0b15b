// The `tcp` agent handle as the host dials it: a plain connection per request whose first bytes
// are the request frame, nothing cached between requests (each dial resolves the name again), the
// token in the envelope only when the handle has one, the pre-auth ceiling checked on every call,
// and a real token-mode agent that answers healthz to anyone and everything else only to the token.
import dns from 'node:dns'
import { mkdtemp, rm } from 'node:fs/promises'
import { connect, createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, expectTypeOf, it } from 'vitest'
import { listFilesThroughAgent } from '../../../src/host/files/agent-file-list.js'
import { AgentUnauthorizedError } from '../../../src/host/refusals/refusal-errors.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { AgentPreauthFrameTooLargeError } from '../../../src/host/transport/transport-errors.js'
import type { SandboxAgentHandle } from '../../../src/index.js'
import { encodeFrame, FRAME_HEADER_BYTES } from '../../../src/wire/frame.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'

const TOKEN = 'tcp-handle-token-5f1e'
const HEALTHZ = { ok: true, protocolVersion: 2, features: [] }

let agent: StartedAgent
const servers: Server[] = []
const dirs: string[] = []

beforeAll(async () => {
	agent = await startAgent({ mode: 'tcp', env: { NAMZU_AGENT_BIND_TOKEN: TOKEN } })
})

afterAll(async () => {
	await agent?.stop()
})

afterEach(async () => {
	await Promise.all(
		servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))),
	)
	await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })))
})

async function listen(server: Server, at: string | { host: string }): Promise<number> {
	servers.push(server)
	await new Promise<void>((resolve) =>
		typeof at === 'string' ? server.listen(at, resolve) : server.listen(0, at.host, resolve),
	)
	const address = server.address()
	return typeof address === 'object' && address ? address.port : 0
}

/** Reads one frame's bytes (header + payload) from a socket and hands them over. */
function onFirstFrame(socket: Socket, done: (bytes: Buffer) => void): void {
	let received = Buffer.alloc(0)
	socket.on('error', () => {})
	socket.on('data', function onData(chunk: Buffer) {
		received = Buffer.concat([received, chunk])
		if (received.length < FRAME_HEADER_BYTES) return
		const length = Number.parseInt(received.subarray(0, 8).toString('latin1'), 16)
		if (received.length < FRAME_HEADER_BYTES + length) return
		socket.off('data', onData)
		done(received)
	})
}

function envelopeOf(bytes: Buffer): Record<string, unknown> {
	return JSON.parse(bytes.subarray(FRAME_HEADER_BYTES).toString('utf8')) as Record<string, unknown>
}

/** A peer that records every connection's bytes up to the end of its first frame, then replies. */
async function recordingPeer(): Promise<{ port: number; firstBytes: Buffer[] }> {
	const firstBytes: Buffer[] = []
	const server = createServer((socket) => {
		onFirstFrame(socket, (bytes) => {
			firstBytes.push(bytes)
			socket.end(encodeFrame(HEALTHZ))
		})
	})
	return { port: await listen(server, { host: '127.0.0.1' }), firstBytes }
}

/** A relay in front of the real agent that counts the connections it accepts. */
async function countingRelay(): Promise<{ port: number; accepted: () => number }> {
	let accepted = 0
	const server = createServer((socket) => {
		accepted++
		const upstream = connect({ host: '127.0.0.1', port: agent.port ?? 0 })
		socket.on('error', () => upstream.destroy())
		upstream.on('error', () => socket.destroy())
		socket.pipe(upstream).pipe(socket)
	})
	return { port: await listen(server, { host: '127.0.0.1' }), accepted: () => accepted }
}

describe('the tcp handle type', () => {
	it('is the fourth arm of SandboxAgentHandle: kind, host, port and an optional token', () => {
		expectTypeOf<Extract<SandboxAgentHandle, { kind: 'tcp' }>>().toEqualTypeOf<{
			readonly kind: 'tcp'
			readonly host: string
			readonly port: number
			readonly token?: string
		}>()
		const handle: SandboxAgentHandle = { kind: 'tcp', host: 'pod.svc', port: 1024 }
		expect(handle.kind).toBe('tcp')
	})

	it('leaves the unix and vsock arms as they were and adds nothing else', () => {
		expectTypeOf<Extract<SandboxAgentHandle, { kind: 'unix' }>>().toEqualTypeOf<{
			readonly kind: 'unix'
			readonly path: string
		}>()
		expectTypeOf<Extract<SandboxAgentHandle, { kind: 'vsock' }>>().toEqualTypeOf<{
			readonly kind: 'vsock'
			readonly udsPath: string
			readonly port: number
		}>()
		expectTypeOf<SandboxAgentHandle['kind']>().toEqualTypeOf<'unix' | 'vsock' | 'tcp'>()
		const unix: SandboxAgentHandle = { kind: 'unix', path: '/run/a.sock' }
		const vsock: SandboxAgentHandle = { kind: 'vsock', udsPath: '/run/v.sock', port: 52 }
		expect([unix.kind, vsock.kind]).toEqual(['unix', 'vsock'])
	})
})

describe('dialing a tcp handle', () => {
	it('sends the request frame as the first bytes of a plain connection and waits for no acknowledgement', async () => {
		const peer = await recordingPeer()
		const transport = new AgentTransport({
			kind: 'tcp',
			host: '127.0.0.1',
			port: peer.port,
			token: TOKEN,
		})
		// The peer writes nothing before the request arrives: a transport waiting for an ack hangs.
		await expect(transport.request('healthz', undefined)).resolves.toEqual(HEALTHZ)
		const [bytes] = peer.firstBytes
		expect(bytes?.subarray(0, FRAME_HEADER_BYTES).toString('latin1')).toMatch(/^[0-9a-f]{8}\n$/)
		const length = Number.parseInt(bytes?.subarray(0, 8).toString('latin1') ?? '', 16)
		// Nothing before the frame and nothing after it: no preamble, no CONNECT line.
		expect(bytes?.length).toBe(FRAME_HEADER_BYTES + length)
		expect(envelopeOf(bytes ?? Buffer.alloc(0))).toEqual({ op: 'healthz', token: TOKEN })
	})

	it('opens one new connection per request and resolves a DNS name again for each one', async () => {
		const relay = await countingRelay()
		const lookups: string[] = []
		const realLookup = dns.lookup
		const counting = (...args: Parameters<typeof dns.lookup>) => {
			if (typeof args[0] === 'string') lookups.push(args[0])
			return Reflect.apply(realLookup, dns, args)
		}
		dns.lookup = counting as typeof dns.lookup
		try {
			const transport = new AgentTransport({
				kind: 'tcp',
				host: 'localhost',
				port: relay.port,
				token: TOKEN,
			})
			const requests = 5
			// The features listFiles reads are read once, by the first request.
			await transport.features()
			for (let i = 1; i < requests; i++) {
				if (i % 2 === 0) await listFilesThroughAgent(transport, agent.workspace)
				else await transport.healthz()
			}
			expect(relay.accepted()).toBe(requests)
			expect(lookups.filter((host) => host === 'localhost')).toHaveLength(requests)
		} finally {
			dns.lookup = realLookup
		}
	})
})

describe('the token field', () => {
	it('is absent from the envelope of a tcp handle without a token', async () => {
		const peer = await recordingPeer()
		const transport = new AgentTransport({ kind: 'tcp', host: '127.0.0.1', port: peer.port })
		await transport.request('healthz', undefined)
		await transport.request('list-files', { path: '/w' })
		expect(peer.firstBytes).toHaveLength(2)
		for (const bytes of peer.firstBytes)
			expect(Object.keys(envelopeOf(bytes))).not.toContain('token')
	})

	it('is never written on a unix or vsock handle', async () => {
		const dir = await mkdtemp(join(tmpdir(), 'namzu-tcp-handle-'))
		dirs.push(dir)
		const envelopes: Record<string, unknown>[] = []
		const unixPath = join(dir, 'agent.sock')
		await listen(
			createServer((socket) =>
				onFirstFrame(socket, (bytes) => {
					envelopes.push(envelopeOf(bytes))
					socket.end(encodeFrame(HEALTHZ))
				}),
			),
			unixPath,
		)
		const vsockPath = join(dir, 'v.sock')
		await listen(
			createServer((socket) => {
				socket.on('error', () => {})
				socket.once('data', (connectLine: Buffer) => {
					expect(connectLine.toString('latin1')).toBe('CONNECT 52\n')
					onFirstFrame(socket, (bytes) => {
						envelopes.push(envelopeOf(bytes))
						socket.end(encodeFrame(HEALTHZ))
					})
					socket.write('OK 1073741824\n')
				})
			}),
			vsockPath,
		)
		await new AgentTransport({ kind: 'unix', path: unixPath }).request('healthz', undefined)
		await new AgentTransport({ kind: 'vsock', udsPath: vsockPath, port: 52 }).request(
			'healthz',
			undefined,
		)
		expect(envelopes).toEqual([{ op: 'healthz' }, { op: 'healthz' }])
	})
})

describe('the pre-auth ceiling', () => {
	it('is checked before dialing on every call, not only the first', async () => {
		const relay = await countingRelay()
		const dials: number[] = []
		const transport = new AgentTransport(
			{ kind: 'tcp', host: '127.0.0.1', port: relay.port, token: TOKEN },
			{ onDialAttempt: (event) => dials.push(event.attempt) },
		)
		const oversized = { path: 'x'.repeat(9 * 1024 * 1024) }
		for (let call = 0; call < 2; call++) {
			await transport.healthz()
			const error = await transport
				.request('read-file', oversized)
				.catch((caught: unknown) => caught)
			expect(error).toBeInstanceOf(AgentPreauthFrameTooLargeError)
			expect((error as Error).message).toContain(`${8 * 1024 * 1024} bytes`)
		}
		// Only the two healthz calls ever dialed.
		expect(dials).toHaveLength(2)
		expect(relay.accepted()).toBe(2)
	})
})

describe('a token-mode agent behind a tcp handle', () => {
	it('answers healthz without the token and serves every other op only with the matching token', async () => {
		const port = agent.port ?? 0
		const anonymous = new AgentTransport({ kind: 'tcp', host: '127.0.0.1', port })
		await expect(anonymous.healthz()).resolves.toMatchObject({ protocolVersion: 2 })
		await expect(listFilesThroughAgent(anonymous, agent.workspace)).rejects.toBeInstanceOf(
			AgentUnauthorizedError,
		)
		const tokened = new AgentTransport({ kind: 'tcp', host: '127.0.0.1', port, token: TOKEN })
		await expect(listFilesThroughAgent(tokened, agent.workspace)).resolves.toEqual([])
	})
})
