/**
 * The host bounds exec output itself, whatever the guest claims: a lying guest (its own process,
 * the real frame codec) sends 300 MiB of stdout against a 100 MiB cap and says nothing was
 * truncated. The host keeps exactly the cap, says `stdoutTruncated`, passes no more than the cap to
 * `onOutput`, drains the stream to the guest's result, and holds less than the cap plus 64 MiB
 * (memory bounds, not timing ones). Positive control: the real agent's output under the bound
 * arrives whole; an explicit `maxOutputBytes` caps in the guest and on the host alike.
 */
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SandboxArgumentError } from '../../../src/contract/errors.js'
import { createAgentSandbox } from '../../../src/host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { DEFAULT_MAX_OUTPUT_BYTES } from '../../../src/wire/protocol.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { type LyingGuest, startLyingGuest } from '../lying-guest.js'

const MiB = 1024 * 1024
/** Streaming 300 MiB through the real codec takes seconds on a loaded machine; no timing is asserted. */
const FLOOD_TIMEOUT_MS = 120_000

// The collector, so what the host still holds is measured rather than what it has not freed yet.
setFlagsFromString('--expose-gc')
const collect = runInNewContext('gc') as () => void

function heapAfterCollection(): number {
	collect()
	return process.memoryUsage().heapUsed
}

function sandboxOn(path: string) {
	return createAgentSandbox({
		id: 'output-bound',
		transport: new AgentTransport({ kind: 'unix', path }),
		rootDir: '/workspace',
		environment: 'linux-namespace',
		release: async () => {},
	})
}

describe('the host bounds exec output', () => {
	let liar: LyingGuest
	let agent: StartedAgent

	beforeAll(async () => {
		liar = await startLyingGuest(300 * MiB)
		agent = await startAgent()
	})

	afterAll(async () => {
		await liar?.stop()
		await agent?.stop()
	})

	it('defaults to the agent cap', async () => {
		const { loadAgentConfig } = await import('../../../src/agent/handler/config.js')
		const config = loadAgentConfig({ NAMZU_AGENT_UNIX_PATH: '/tmp/x.sock' })
		expect(config.defaultMaxOutputBytes).toBe(DEFAULT_MAX_OUTPUT_BYTES)
		expect(DEFAULT_MAX_OUTPUT_BYTES).toBe(100 * MiB)
	})

	it(
		'keeps exactly the cap of a 300 MiB flood, says truncated, and retains less than cap + 64 MiB',
		async () => {
			const sandbox = sandboxOn(liar.socketPath)
			let forwarded = 0
			try {
				// Warm up the code paths so the baseline is not their first use.
				await sandbox.exec('true', [], { maxOutputBytes: 1024 })
				const before = heapAfterCollection()
				const result = await sandbox.exec('flood', [], {
					onOutput: (chunk) => {
						forwarded += chunk.data.length
					},
				})
				// Measured while the result (and its 100 MiB of stdout) is still held.
				const retained = heapAfterCollection() - before
				expect(result).toMatchObject({ exitCode: 0, timedOut: false, stdoutTruncated: true })
				expect(result.stderrTruncated).toBe(false)
				expect(result.stdout.length).toBe(DEFAULT_MAX_OUTPUT_BYTES)
				expect(forwarded).toBe(DEFAULT_MAX_OUTPUT_BYTES)
				expect(retained).toBeLessThan(DEFAULT_MAX_OUTPUT_BYTES + 64 * MiB)
			} finally {
				await sandbox.destroy()
			}
		},
		FLOOD_TIMEOUT_MS,
	)

	it(
		'never holds the flood: with a 4 MiB bound the process grows far less than the 300 MiB sent',
		async () => {
			const sandbox = sandboxOn(liar.socketPath)
			const cap = 4 * MiB
			try {
				await sandbox.exec('true', [], { maxOutputBytes: 1024 })
				heapAfterCollection()
				const before = process.memoryUsage().rss
				let peak = before
				const sampler = setInterval(() => {
					peak = Math.max(peak, process.memoryUsage().rss)
				}, 5)
				let result: Awaited<ReturnType<typeof sandbox.exec>>
				try {
					result = await sandbox.exec('flood', [], { maxOutputBytes: cap })
				} finally {
					clearInterval(sampler)
				}
				peak = Math.max(peak, process.memoryUsage().rss)
				expect(result).toMatchObject({ exitCode: 0, stdoutTruncated: true })
				expect(result.stdout.length).toBe(cap)
				// Whatever the collector has not reclaimed yet included: a host that kept the flood would
				// grow by 300 MiB.
				expect(peak - before).toBeLessThan(cap + 124 * MiB)
			} finally {
				await sandbox.destroy()
			}
		},
		FLOOD_TIMEOUT_MS,
	)

	it('holds a lying guest to an explicit, smaller bound', async () => {
		const sandbox = sandboxOn(liar.socketPath)
		try {
			const result = await sandbox.exec('flood', [], { maxOutputBytes: 1000 })
			expect(result).toMatchObject({ exitCode: 0, stdoutTruncated: true })
			expect(result.stdout).toBe('x'.repeat(1000))
		} finally {
			await sandbox.destroy()
		}
	})

	it('positive control: the real agent delivers output under the bound whole, untruncated', async () => {
		const sandbox = sandboxOn(agent.socketPath ?? '')
		try {
			const result = await sandbox.exec('sh', ['-c', 'head -c 200000 /dev/zero | tr "\\0" y'])
			expect(result.stdout).toBe('y'.repeat(200_000))
			expect(result).toMatchObject({ stdoutTruncated: false, stderrTruncated: false })
		} finally {
			await sandbox.destroy()
		}
	})

	it('sends an explicit maxOutputBytes to the real agent, which caps there too', async () => {
		const sandbox = sandboxOn(agent.socketPath ?? '')
		try {
			const result = await sandbox.exec(
				'sh',
				['-c', 'head -c 5000 /dev/zero | tr "\\0" y; head -c 10 /dev/zero | tr "\\0" e >&2'],
				{ maxOutputBytes: 1000 },
			)
			expect(result.stdout).toBe('y'.repeat(1000))
			expect(result.stderr).toBe('e'.repeat(10))
			expect(result).toMatchObject({ exitCode: 0, stdoutTruncated: true, stderrTruncated: false })
		} finally {
			await sandbox.destroy()
		}
	})

	it.each([0, -1, 1.5, Number.NaN])('refuses maxOutputBytes %s by name', async (value) => {
		const sandbox = sandboxOn(agent.socketPath ?? '')
		try {
			await expect(sandbox.exec('true', [], { maxOutputBytes: value })).rejects.toBeInstanceOf(
				SandboxArgumentError,
			)
			await expect(sandbox.exec('true', [], { maxOutputBytes: value })).rejects.toMatchObject({
				method: 'exec',
				parameter: 'options.maxOutputBytes',
				expected: 'a positive integer',
			})
		} finally {
			await sandbox.destroy()
		}
	})
})
