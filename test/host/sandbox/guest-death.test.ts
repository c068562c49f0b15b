/**
 * The host's guest-death mechanism on its own, over a real agent process and a tier of our own
 * that watches it (`transport.liveness.watch`): calls in flight fail with the one `GuestDiedError`
 * the tier reports, later calls refuse with it without dialing, the handle's status and `guestExit`
 * say so, and `destroy()` still releases. Controls: a transport nobody watches behaves as before,
 * and a guest's own answer (a missing file) is never taken for a death.
 */
import type { ChildProcess } from 'node:child_process'
import { afterEach, describe, expect, it } from 'vitest'
import { SandboxFileError } from '../../../src/contract/errors.js'
import { RemoteCancellationUnknownError } from '../../../src/host/refusals/refusal-errors.js'
import { type AgentSandbox, createAgentSandbox } from '../../../src/host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { GuestDiedError, type GuestExit } from '../../../src/host/transport/transport-errors.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'

const started: StartedAgent[] = []
afterEach(async () => {
	for (const agent of started.splice(0)) await agent.stop()
})

/** How the child ended, as a tier would report it. */
function endOf(child: ChildProcess): Promise<GuestExit> {
	return new Promise((resolve) => {
		child.once('exit', (code, signal) => resolve({ exitCode: code, signal, sandboxId: 'watched' }))
	})
}

async function sandboxOver(options: { readonly watched: boolean }): Promise<{
	sandbox: AgentSandbox
	agent: StartedAgent
	releases: () => number
	dials: () => number
}> {
	const agent = await startAgent()
	started.push(agent)
	let releases = 0
	let dials = 0
	const transport = new AgentTransport(
		{ kind: 'unix', path: agent.socketPath ?? '' },
		{ onDialAttempt: () => dials++ },
	)
	if (options.watched) transport.liveness.watch(endOf(agent.process))
	const sandbox = createAgentSandbox({
		id: 'watched',
		transport,
		rootDir: agent.workspace,
		environment: 'linux-namespace',
		// A short cancel window keeps the unwatched control quick; a watched death never waits for it.
		execution: { cancelConfirmTimeoutMs: 1500 },
		release: async () => {
			releases++
		},
	})
	return { sandbox, agent, releases: () => releases, dials: () => dials }
}

/** An exec of a long sleep, once it has started (wrapped: an async function would flatten it). */
async function startedSleep(sandbox: AgentSandbox): Promise<{ outcome: Promise<unknown> }> {
	let output = ''
	const running = sandbox
		.exec('sh', ['-c', 'echo started; exec sleep 60'], {
			onOutput: ({ data }) => {
				output += data
			},
		})
		.catch((error: unknown) => error)
	const deadline = Date.now() + 5000
	while (!output.includes('started')) {
		if (Date.now() > deadline) throw new Error('the command never started')
		await new Promise((resolve) => setTimeout(resolve, 10))
	}
	return { outcome: running }
}

describe('a guest its tier watches', () => {
	it('fails the call in flight with the GuestDiedError the tier reports, before the cancel window', async () => {
		const { sandbox, agent, releases, dials } = await sandboxOver({ watched: true })
		const running = await startedSleep(sandbox)
		agent.process.kill('SIGKILL')
		const outcome = await running.outcome
		expect(outcome).toBeInstanceOf(GuestDiedError)
		expect(outcome).toMatchObject({ exitCode: null, signal: 'SIGKILL', sandboxId: 'watched' })
		expect((outcome as GuestDiedError).oomKilled).toBeUndefined()
		expect(sandbox.status).toBe('destroyed')
		expect(sandbox.guestExit).toEqual({ exitCode: null, signal: 'SIGKILL', sandboxId: 'watched' })
		// Later calls refuse with the same error and never dial.
		const dialed = dials()
		await expect(sandbox.readFile('x')).rejects.toBe(outcome)
		await expect(sandbox.listSessions()).rejects.toBe(outcome)
		expect(dials()).toBe(dialed)
		await sandbox.destroy()
		expect(releases()).toBe(1)
	})

	it('a death the tier declares refuses every later call at once, whatever the socket does', async () => {
		const { sandbox, dials } = await sandboxOver({ watched: true })
		expect((await sandbox.exec('echo', ['alive'])).stdout).toBe('alive\n')
		const died = sandbox.transport.liveness.declare({ exitCode: 3, signal: null })
		expect(died.message).toMatch(/exited with code 3/)
		const dialed = dials()
		await expect(sandbox.exec('echo', ['again'])).rejects.toBe(died)
		expect(dials()).toBe(dialed)
		// The first report wins.
		expect(sandbox.transport.liveness.declare({ exitCode: null, signal: 'SIGKILL' })).toBe(died)
	})

	it("a guest's own answer is never taken for a death", async () => {
		const { sandbox } = await sandboxOver({ watched: true })
		await expect(sandbox.readFile('missing.txt')).rejects.toBeInstanceOf(SandboxFileError)
		expect(sandbox.status).toBe('ready')
		expect(sandbox.guestExit).toBeUndefined()
		await sandbox.destroy()
	})
})

describe('a guest nobody watches (the control)', () => {
	it('ends an exec whose agent was killed as before: the cancel is unconfirmable, no GuestDiedError', async () => {
		const { sandbox, agent } = await sandboxOver({ watched: false })
		const running = await startedSleep(sandbox)
		agent.process.kill('SIGKILL')
		const outcome = await running.outcome
		expect(outcome).toBeInstanceOf(RemoteCancellationUnknownError)
		expect(sandbox.guestExit).toBeUndefined()
		await sandbox.destroy()
	})
})
