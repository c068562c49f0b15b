/** `exec` through createAgentSandbox against the real agent on a unix socket. */
import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type AgentSandbox, createAgentSandbox } from '../../../src/host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'

let agent: StartedAgent
let sandbox: AgentSandbox

beforeAll(async () => {
	agent = await startAgent()
	sandbox = createAgentSandbox({
		id: 'exec-suite',
		transport: new AgentTransport({ kind: 'unix', path: agent.socketPath ?? '' }),
		rootDir: agent.workspace,
		environment: 'linux-namespace',
		release: async () => {},
	})
})

afterAll(async () => {
	await sandbox?.destroy()
	await agent?.stop()
})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('exec against the real agent', () => {
	it.each([
		[0, ['-c', 'exit 0']],
		[3, ['-c', 'exit 3']],
		[127, ['-c', 'exit 127']],
	])('reports exit code %i', async (code, args) => {
		const result = await sandbox.exec('sh', args)
		expect(result.exitCode).toBe(code)
		expect(result.timedOut).toBe(false)
		expect(result.aborted).toBeUndefined()
	})

	it('streams output to onOutput before the command ends and keeps it all in the result', async () => {
		const chunks: string[] = []
		let sawFirstEarly = false
		const pending = sandbox.exec('sh', ['-c', 'echo one; sleep 0.3; echo two >&2; echo three'], {
			onOutput: (chunk) => chunks.push(`${chunk.stream}:${chunk.data}`),
		})
		await sleep(200)
		sawFirstEarly = chunks.join('').includes('one')
		const result = await pending
		expect(sawFirstEarly).toBe(true)
		expect(result.stdout).toBe('one\nthree\n')
		expect(result.stderr).toBe('two\n')
		expect(chunks.filter((chunk) => chunk.startsWith('stdout:')).join('')).toContain('one')
	})

	it('layers the call env over the scrubbed environment and resolves a relative cwd against rootDir', async () => {
		await mkdir(join(agent.workspace, 'sub'), { recursive: true })
		const result = await sandbox.exec('sh', ['-c', 'echo "$GREETING"; pwd; env'], {
			env: { GREETING: 'hi there' },
			cwd: 'sub',
		})
		const [greeting, cwd] = result.stdout.split('\n')
		expect(greeting).toBe('hi there')
		expect(cwd).toBe(join(agent.workspace, 'sub'))
		expect(result.stdout).not.toMatch(/NAMZU_AGENT_/)
	})

	it('refuses a guest spawn failure as a named command error', async () => {
		await expect(sandbox.exec('definitely-not-a-command-xyz')).rejects.toMatchObject({
			name: 'RemoteCommandError',
		})
	})

	it('is busy while a command runs and ready after', async () => {
		const pending = sandbox.exec('sleep', ['0.3'])
		await sleep(50)
		expect(sandbox.status).toBe('busy')
		await pending
		expect(sandbox.status).toBe('ready')
	})

	it('never lets an aborted SIGTERM-ignoring command finish as a clean success', async () => {
		const marker = join(agent.workspace, 'abort-marker')
		const controller = new AbortController()
		// Abort once the process demonstrably runs; it ignores SIGTERM and would finish on its own.
		const result = await sandbox.exec(
			'sh',
			['-c', `trap '' TERM; echo started; sleep 1; touch ${marker}; exit 0`],
			{
				signal: controller.signal,
				onOutput: (chunk) => {
					if (chunk.data.includes('started')) controller.abort()
				},
			},
		)
		expect(result.aborted).toBe(true)
		expect(result.timedOut).toBe(false)
		expect(result.exitCode).not.toBe(0)
		expect(result.stdout).toBe('started\n')
		await sleep(1500)
		expect(existsSync(marker)).toBe(false)
	})

	it('resolves an abort before start as never started, without running anything', async () => {
		const marker = join(agent.workspace, 'never-marker')
		const result = await sandbox.exec('touch', [marker], { signal: AbortSignal.abort() })
		expect(result).toMatchObject({ aborted: true, exitCode: 1, timedOut: false })
		await sleep(100)
		expect(existsSync(marker)).toBe(false)
	})

	it('reports a fired timeout as timedOut, never as aborted', async () => {
		const result = await sandbox.exec('sleep', ['5'], { timeout: 300 })
		expect(result.timedOut).toBe(true)
		expect(result.aborted).toBeUndefined()
		expect(result.exitCode).not.toBe(0)
	})

	it('runs concurrent commands without mixing their output', async () => {
		const runs = Array.from({ length: 6 }, (_, index) =>
			sandbox.exec('sh', ['-c', `for i in 1 2 3 4 5; do echo run${index}; sleep 0.02; done`]),
		)
		const results = await Promise.all(runs)
		results.forEach((result, index) => {
			expect(result.exitCode).toBe(0)
			expect(result.stdout).toBe(`run${index}\n`.repeat(5))
		})
	})
})
