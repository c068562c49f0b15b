/**
 * `VsockAgentTransport` / `VsockTransportOptions`: the spec's names for the one host transport,
 * exercised against the real agent (dist/agent.cjs) on a unix socket. Each option is the shared
 * transport's, under the name the microVM tier's callers use.
 */
import { afterEach, describe, expect, it } from 'vitest'
import {
	AgentDialFailedError,
	AgentWriteFileTooLargeError,
	DEFAULT_MAX_WRITE_FILE_BYTES,
	FIRECRACKER_AGENT_PROTOCOL_VERSION,
	REMOTE_EXECUTION_PROTOCOL_VERSION,
	VsockAgentTransport,
} from '../../../src/index.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'

const agents: StartedAgent[] = []

afterEach(async () => {
	for (const agent of agents.splice(0)) await agent.stop()
})

async function transportToAgent(
	options: ConstructorParameters<typeof VsockAgentTransport>[1] = {},
): Promise<VsockAgentTransport> {
	const agent = await startAgent()
	agents.push(agent)
	return new VsockAgentTransport({ kind: 'unix', path: agent.socketPath ?? '' }, options)
}

/** Joins an execute stream's stdout, whether it came as JSON deltas or binary frames. */
async function stdoutOf(events: AsyncIterable<Record<string, unknown>>): Promise<string> {
	let out = ''
	for await (const event of events) {
		if (event.type !== 'stdout_delta') continue
		if (typeof event.data === 'string') out += event.data
		if (Buffer.isBuffer(event.bytes)) out += event.bytes.toString('utf8')
	}
	return out
}

describe('VsockAgentTransport', () => {
	it('streams an execute through executeStreamed()', async () => {
		const transport = await transportToAgent()
		const out = await stdoutOf(
			transport.executeStreamed(
				{ command: 'sh', args: ['-c', 'echo streamed'] },
				AbortSignal.timeout(60_000),
			),
		)
		expect(out).toBe('streamed\n')
	})

	it('writes a file with writeFile(path, data, signal) that a later exec reads back', async () => {
		const transport = await transportToAgent()
		await transport.writeFile(
			'note.txt',
			'written over vsock-named transport',
			AbortSignal.timeout(60_000),
		)
		const out = await stdoutOf(
			transport.executeStreamed(
				{ command: 'cat', args: ['note.txt'] },
				AbortSignal.timeout(60_000),
			),
		)
		expect(out).toBe('written over vsock-named transport')
	})

	it('splits a write into writeFilePartBytes parts when the body exceeds one frame', async () => {
		const transport = await transportToAgent({
			maxRequestFrameBytes: 64 * 1024,
			writeFilePartBytes: 10_000,
		})
		const body = Buffer.alloc(200_000, 0x61)
		await transport.writeFile('big.txt', body)
		const out = await stdoutOf(
			transport.executeStreamed(
				{ command: 'wc', args: ['-c', 'big.txt'] },
				AbortSignal.timeout(60_000),
			),
		)
		expect(out.trim()).toBe('200000 big.txt')
		expect(transport.options.writeFilePartBytes).toBe(10_000)
	})

	it('defaults maxWriteFileBytes to 1 GiB and refuses a larger body with AgentWriteFileTooLargeError before dialing', async () => {
		expect(new VsockAgentTransport({ kind: 'unix', path: '/x' }).options.maxWriteFileBytes).toBe(
			DEFAULT_MAX_WRITE_FILE_BYTES,
		)
		expect(DEFAULT_MAX_WRITE_FILE_BYTES).toBe(1024 ** 3)
		let attempts = 0
		const transport = new VsockAgentTransport(
			{ kind: 'unix', path: '/nonexistent/agent.sock' },
			{ maxWriteFileBytes: 8, onDialAttempt: () => attempts++ },
		)
		const refused = await transport.writeFile('f', 'nine bytes').catch((error: unknown) => error)
		expect(refused).toBeInstanceOf(AgentWriteFileTooLargeError)
		expect(String((refused as Error).message)).toContain('8')
		expect(attempts).toBe(0)
	})

	it('requests no stream heartbeat unless heartbeatMs is given', () => {
		const quiet = new VsockAgentTransport({ kind: 'unix', path: '/x' })
		expect(quiet.options.streamHeartbeatMs).toBeUndefined()
		const asking = new VsockAgentTransport({ kind: 'unix', path: '/x' }, { heartbeatMs: 500 })
		expect(asking.options.streamHeartbeatMs).toBe(500)
	})

	it('tells onDial about a connection and onDialAttempt about each attempt', async () => {
		const dials: number[] = []
		let attempts = 0
		const transport = await transportToAgent({
			onDial: (event) => dials.push(event.attempts),
			onDialAttempt: () => attempts++,
		})
		const health = await transport.healthz(AbortSignal.timeout(30_000))
		expect(dials).toEqual([1])
		expect(attempts).toBe(1)
		expect(health.protocolVersion).toBe(FIRECRACKER_AGENT_PROTOCOL_VERSION)
		expect(FIRECRACKER_AGENT_PROTOCOL_VERSION).toBe(REMOTE_EXECUTION_PROTOCOL_VERSION)
	})

	it('stops at the first attempt when permanentDialFailure says so, with AgentDialFailedError', async () => {
		let attempts = 0
		const transport = new VsockAgentTransport(
			{ kind: 'unix', path: '/nonexistent/agent.sock' },
			{
				connectRetryBudgetMs: 30_000,
				permanentDialFailure: () => true,
				onDialAttempt: () => attempts++,
			},
		)
		const failed = await transport.healthz().catch((error: unknown) => error)
		expect(failed).toBeInstanceOf(AgentDialFailedError)
		expect(attempts).toBe(1)
	})
})
