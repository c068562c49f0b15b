/**
 * `exec` with `stdin` and `collectOutput: false`, against the real agent on a real socket: stdin
 * reaches the command and then EOF; an uncollected run streams past the 100 MiB retention cap
 * whole to `onOutput` while the result holds nothing; a promise `onOutput` returns holds the next
 * chunk (backpressure). Positive control: the default still collects (and caps) as before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createAgentSandbox } from '../../../src/host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { DEFAULT_MAX_OUTPUT_BYTES } from '../../../src/wire/protocol.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'

const MiB = 1024 * 1024
/** 110 MiB through the real codec takes seconds on a loaded machine; no timing is asserted. */
const STREAM_TIMEOUT_MS = 180_000

describe('exec stdin and uncollected output', () => {
	let agent: StartedAgent
	const sandboxOf = () =>
		createAgentSandbox({
			id: 'uncollected',
			transport: new AgentTransport({ kind: 'unix', path: agent.socketPath ?? '' }),
			rootDir: '/workspace',
			environment: 'linux-namespace',
			release: async () => {},
		})

	beforeAll(async () => {
		agent = await startAgent()
	})
	afterAll(async () => {
		await agent?.stop()
	})

	it('writes stdin to the command and then closes it (EOF)', async () => {
		const sandbox = sandboxOf()
		try {
			const result = await sandbox.exec('sh', ['-c', 'cat; echo "<eof>"'], {
				stdin: 'line 1\nline 2\n',
			})
			expect(result).toMatchObject({ exitCode: 0, stdout: 'line 1\nline 2\n<eof>\n' })
			const empty = await sandbox.exec('sh', ['-c', 'wc -c'])
			expect(empty.stdout.trim()).toBe('0')
		} finally {
			await sandbox.destroy()
		}
	})

	it(
		'streams 110 MiB whole to onOutput with collectOutput: false and retains none of it',
		async () => {
			const sandbox = sandboxOf()
			const total = 110 * MiB
			let forwarded = 0
			try {
				const result = await sandbox.exec('head', ['-c', String(total), '/dev/zero'], {
					collectOutput: false,
					onOutput: (chunk) => {
						forwarded += chunk.data.length
					},
				})
				expect(total).toBeGreaterThan(DEFAULT_MAX_OUTPUT_BYTES)
				expect(forwarded).toBe(total)
				expect(result).toMatchObject({
					exitCode: 0,
					stdout: '',
					stderr: '',
					stdoutTruncated: false,
					stderrTruncated: false,
				})
			} finally {
				await sandbox.destroy()
			}
		},
		STREAM_TIMEOUT_MS,
	)

	it('holds further output while the promise onOutput returned is pending', async () => {
		const sandbox = sandboxOf()
		const seen: string[] = []
		let release: () => void = () => {}
		const held = new Promise<void>((resolve) => {
			release = resolve
		})
		let chunksWhileHeld = -1
		try {
			const run = sandbox.exec('sh', ['-c', 'echo first; sleep 0.2; echo second; echo third'], {
				collectOutput: false,
				onOutput: (chunk) => {
					seen.push(chunk.data)
					if (seen.length === 1) return held
					return undefined
				},
			})
			// Long after `second` was printed, it has not been delivered: the first chunk holds it.
			await new Promise((resolve) => setTimeout(resolve, 2000))
			chunksWhileHeld = seen.length
			release()
			const result = await run
			expect(chunksWhileHeld).toBe(1)
			expect(seen.join('')).toBe('first\nsecond\nthird\n')
			expect(result.exitCode).toBe(0)
		} finally {
			release()
			await sandbox.destroy()
		}
	})

	it('positive control: by default the result collects the output', async () => {
		const sandbox = sandboxOf()
		try {
			const chunks: string[] = []
			const result = await sandbox.exec('sh', ['-c', 'echo kept'], {
				onOutput: (chunk) => {
					chunks.push(chunk.data)
				},
			})
			expect(result.stdout).toBe('kept\n')
			expect(chunks.join('')).toBe('kept\n')
		} finally {
			await sandbox.destroy()
		}
	})
})
