/**
 * Binary data frames against the real agent, in all four pairings of a host and an agent that
 * have them or not. The "old" side is the real code with the feature switched off by its seam:
 * the agent started with `NAMZU_AGENT_BINARY_FRAMES=0` (it neither advertises nor honours them),
 * the host's transport built with `binaryFrames: false` (it never asks). A recording relay between
 * the two shows what crossed the wire: binary frames only when both sides have them, and every
 * verb's bytes identical in every pairing.
 */
import { randomBytes } from 'node:crypto'
import { readdir, readFile, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readFileThroughAgent } from '../../../src/host/files/agent-file-read.js'
import { writeFileThroughAgent } from '../../../src/host/files/agent-file-write.js'
import { createAgentSandbox } from '../../../src/host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { BINARY_FRAMES_FEATURE } from '../../../src/wire/features.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import {
	type FrameRecordingRelay,
	type RelayedConnection,
	startFrameRecordingRelay,
} from '../../helpers/frame-recording-relay.js'

const MiB = 1024 * 1024
const TOKEN = 'binary-frames-token-0123456789'

interface Side {
	readonly agent: StartedAgent
	readonly relay: FrameRecordingRelay
}

let newAgent: Side
let oldAgent: Side
let echo: Server
let echoPort = 0

async function side(env: Record<string, string>): Promise<Side> {
	const agent = await startAgent({ mode: 'tcp', env: { NAMZU_AGENT_BIND_TOKEN: TOKEN, ...env } })
	return { agent, relay: await startFrameRecordingRelay(agent.port ?? 0) }
}

beforeAll(async () => {
	;[newAgent, oldAgent] = await Promise.all([side({}), side({ NAMZU_AGENT_BINARY_FRAMES: '0' })])
	echo = createServer((socket) => {
		socket.on('error', () => undefined)
		socket.pipe(socket)
	})
	await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve))
	const address = echo.address()
	echoPort = typeof address === 'object' && address ? address.port : 0
})

afterAll(async () => {
	await new Promise((resolve) => echo.close(resolve))
	for (const s of [newAgent, oldAgent]) {
		await s?.relay.close()
		await s?.agent.stop()
	}
})

function transportTo(target: Side, binaryFrames: boolean): AgentTransport {
	return new AgentTransport(
		{ kind: 'tcp', host: '127.0.0.1', port: target.relay.port, token: TOKEN },
		{ binaryFrames },
	)
}

/** The connections opened for `op` since `from` (relay connections are recorded in order). */
function openedSince(target: Side, from: number, op: string): RelayedConnection[] {
	return target.relay.connections.slice(from).filter((c) => c.fromHost[0]?.op === op)
}

function binaryFrames(frames: readonly Record<string, unknown>[]): number {
	return frames.filter((frame) => frame.binary !== undefined).length
}

const PAIRINGS = [
	{ name: 'new host, new agent', host: true, agent: 'new', binary: true },
	{ name: 'new host, old agent', host: true, agent: 'old', binary: false },
	{ name: 'old host, new agent', host: false, agent: 'new', binary: false },
	{ name: 'old host, old agent', host: false, agent: 'old', binary: false },
] as const

describe.each(PAIRINGS)('binary frames, $name', (pairing) => {
	const target = (): Side => (pairing.agent === 'new' ? newAgent : oldAgent)

	it(`advertises binary-frames only on a new agent; binary on the wire: ${pairing.binary}`, async () => {
		const transport = transportTo(target(), pairing.host)
		const features = await transport.features()
		expect(features.has(BINARY_FRAMES_FEATURE)).toBe(pairing.agent === 'new')
		expect(transport.binaryFramesAgreed).toBe(pairing.binary)
	})

	it('readFile streams the same bytes, as binary frames only when both sides have them', async () => {
		const transport = transportTo(target(), pairing.host)
		const data = randomBytes(3 * MiB + 17)
		await writeFile(join(target().agent.workspace, 'read.bin'), data)
		const from = target().relay.connections.length
		const back = await readFileThroughAgent(transport, 'read.bin')
		expect(back.equals(data)).toBe(true)
		const [stream] = openedSince(target(), from, 'read-file-stream')
		expect(stream?.fromHost[0]?.body).toEqual(
			pairing.binary ? { path: 'read.bin', binaryFrames: true } : { path: 'read.bin' },
		)
		expect(binaryFrames(stream?.fromGuest ?? []) > 0).toBe(pairing.binary)
	})

	it('writeFile lands the same bytes durably, streamed on one connection only when negotiated', async () => {
		const transport = transportTo(target(), pairing.host)
		const data = randomBytes(9 * MiB + 5)
		const from = target().relay.connections.length
		await writeFileThroughAgent(transport, 'write.bin', data)
		expect((await readFile(join(target().agent.workspace, 'write.bin'))).equals(data)).toBe(true)
		const writes = openedSince(target(), from, 'write-file')
		const names = await readdir(target().agent.workspace)
		expect(names.filter((name) => name.startsWith('.namzu-write-'))).toEqual([])
		if (pairing.binary) {
			expect(writes).toHaveLength(1)
			expect(writes[0]?.fromHost[0]?.body).toEqual({
				path: 'write.bin',
				sizeBytes: data.length,
				binaryFrames: true,
			})
			expect(binaryFrames(writes[0]?.fromHost ?? [])).toBe(Math.ceil(data.length / MiB))
			expect(writes[0]?.fromHost.at(-1)).toEqual({ type: 'end' })
		} else {
			// The 8 MiB pre-auth ceiling of a tcp handle puts 9 MiB into a part sequence.
			expect(writes.length).toBeGreaterThan(1)
			for (const write of writes) expect(binaryFrames(write.fromHost)).toBe(0)
		}
	})

	it('exec output arrives as the same text and in order, whichever frames carried it', async () => {
		const transport = transportTo(target(), pairing.host)
		await transport.features()
		const sandbox = createAgentSandbox({
			id: 'binary-frames',
			transport,
			rootDir: target().agent.workspace,
			environment: 'basic',
			release: async () => undefined,
		})
		const from = target().relay.connections.length
		const chunks: string[] = []
		const script =
			"printf 'héllo ✓ '; printf 'wörld' >&2; printf 'ünd \\001\\n'; head -c 300000 /dev/zero | tr '\\0' x"
		const result = await sandbox.exec('/bin/sh', ['-c', script], {
			onOutput: (chunk) => chunks.push(chunk.stream),
		})
		expect(result.exitCode).toBe(0)
		expect(result.stdout.startsWith('héllo ✓ ünd \u0001\n')).toBe(true)
		expect(result.stdout.length).toBe('héllo ✓ ünd \u0001\n'.length + 300_000)
		expect(result.stderr).toBe('wörld')
		expect(chunks[0]).toBe('stdout')
		const [run] = openedSince(target(), from, 'execute')
		expect(binaryFrames(run?.fromGuest ?? []) > 0).toBe(pairing.binary)
		await sandbox.destroy()
	})

	it('a terminal prints the same text, as binary frames only when negotiated', async () => {
		const transport = transportTo(target(), pairing.host)
		await transport.features()
		const from = target().relay.connections.length
		const terminal = await transport.openTerminal({
			command: '/bin/sh',
			args: ['-c', "printf 'tërminal ✓ done'"],
			cols: 80,
			rows: 24,
		})
		let text = ''
		terminal.onData((chunk) => {
			text += chunk
		})
		expect((await terminal.exited).exitCode).toBe(0)
		expect(text).toContain('tërminal ✓ done')
		const [stream] = openedSince(target(), from, 'terminal')
		expect(binaryFrames(stream?.fromGuest ?? []) > 0).toBe(pairing.binary)
	})

	it('a tcp connection echoes the same bytes both ways', async () => {
		const transport = transportTo(target(), pairing.host)
		await transport.features()
		const from = target().relay.connections.length
		const connection = await transport.openTcpConnection({ port: echoPort })
		const data = randomBytes(2 * MiB + 3)
		const received: Buffer[] = []
		let length = 0
		const all = new Promise<void>((resolve) => {
			connection.onData((chunk) => {
				received.push(chunk)
				length += chunk.length
				if (length >= data.length) resolve()
			})
		})
		connection.write(data)
		await all
		expect(Buffer.concat(received).equals(data)).toBe(true)
		await connection.close()
		const [stream] = openedSince(target(), from, 'tcp-connect')
		expect(binaryFrames(stream?.fromHost ?? []) > 0).toBe(pairing.binary)
		expect(binaryFrames(stream?.fromGuest ?? []) > 0).toBe(pairing.binary)
	})
})
