/**
 * `AgentSandbox.quiesce()` and `.flush()`: against the real agent through `createAgentSandbox`,
 * and against in-test guests for what a real agent of this release never answers (no feature,
 * a process that survived SIGKILL).
 */
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import {
	FlushUnconfirmedError,
	FlushUnsupportedError,
	QuiesceUnconfirmedError,
	QuiesceUnsupportedError,
} from '../../../src/host/index.js'
import { type AgentSandbox, createAgentSandbox } from '../../../src/host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { type FakeAgent, healthzReply, reply, startFakeAgent } from '../fake-agent-server.js'

let agent: StartedAgent | undefined
let fake: FakeAgent | undefined
let sandbox: AgentSandbox | undefined

afterEach(async () => {
	await sandbox?.destroy()
	await agent?.stop()
	await fake?.close()
	sandbox = undefined
	agent = undefined
	fake = undefined
})

function sandboxOn(path: string, rootDir: string): AgentSandbox {
	return createAgentSandbox({
		id: 'lifecycle-ops',
		transport: new AgentTransport({ kind: 'unix', path }),
		rootDir,
		environment: 'linux-namespace',
		release: async () => {},
	})
}

async function realSandbox(env: Record<string, string> = {}): Promise<AgentSandbox> {
	agent = await startAgent({ env: { NAMZU_AGENT_QUIESCE_GRACE_MS: '200', ...env } })
	sandbox = sandboxOn(agent.socketPath ?? '', agent.workspace)
	return sandbox
}

describe('AgentSandbox.quiesce', () => {
	it('stops a running command and resolves with the report, scope included', async () => {
		const box = await realSandbox()
		const running = box.exec('/bin/sh', ['-c', "trap '' TERM; sleep 30"])
		await new Promise((resolve) => setTimeout(resolve, 300))
		const report = await box.quiesce({ graceMs: 100 })
		expect(report.scope).toBe('owned-sessions')
		expect(report.graceMs).toBe(100)
		expect(report.stopped.some((entry) => entry.signal === 'SIGKILL')).toBe(true)
		const result = await running
		expect(result.exitCode).not.toBe(0)
		// The agent keeps serving after a quiesce.
		await box.writeFile('after.txt', 'ok')
		expect((await box.readFile('after.txt')).toString()).toBe('ok')
		expect((await box.exec('/bin/echo', ['still here'])).stdout).toBe('still here\n')
	})

	it('refuses with QuiesceUnsupportedError before dialing a guest that does not advertise quiesce', async () => {
		fake = await startFakeAgent((request, socket) => {
			if (request.op === 'healthz') reply(socket, healthzReply(['write-file-parts']))
			else reply(socket, { ok: false, error: `unknown_op: ${request.op}` })
		})
		sandbox = sandboxOn(fake.path ?? '', '/workspace')
		await expect(sandbox.quiesce()).rejects.toThrow(QuiesceUnsupportedError)
		expect(fake.requests.map((request) => request.op)).toEqual(['healthz'])
	})

	it('rejects with QuiesceUnconfirmedError carrying the pid the guest named', async () => {
		fake = await startFakeAgent((request, socket) => {
			if (request.op === 'healthz') reply(socket, healthzReply(['quiesce']))
			else {
				reply(socket, {
					ok: false,
					error: 'quiesce_unconfirmed',
					message: 'process 4242 was still present 1000 ms after SIGKILL',
					pid: 4242,
				})
			}
		})
		sandbox = sandboxOn(fake.path ?? '', '/workspace')
		const error = await sandbox.quiesce({ graceMs: 10 }).catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(QuiesceUnconfirmedError)
		expect(error).toMatchObject({ pid: 4242, guestCode: 'quiesce_unconfirmed' })
		expect(fake.requests[1]?.body).toEqual({ graceMs: 10 })
	})
})

describe('AgentSandbox.flush', () => {
	it('resolves with the duration and the workspace the guest flushed', async () => {
		const box = await realSandbox({
			NAMZU_AGENT_FLUSH_COMMAND: 'echo done > "$1/.flushed"',
		})
		const report = await box.flush()
		expect(report.workspace).toBe(agent?.workspace)
		expect(typeof report.durationMs).toBe('number')
		expect((await readFile(join(agent?.workspace ?? '', '.flushed'), 'utf8')).trim()).toBe('done')
	})

	it('rejects with FlushUnconfirmedError carrying the guest message when the sync overruns', async () => {
		const box = await realSandbox({ NAMZU_AGENT_FLUSH_COMMAND: 'sleep 5' })
		const error = await box.flush({ timeoutMs: 150 }).catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(FlushUnconfirmedError)
		expect((error as FlushUnconfirmedError).guestMessage).toContain('150 ms')
	})

	it('refuses with FlushUnsupportedError before dialing a guest that does not advertise flush', async () => {
		fake = await startFakeAgent((_request, socket) => {
			reply(socket, healthzReply(['quiesce']))
		})
		sandbox = sandboxOn(fake.path ?? '', '/workspace')
		await expect(sandbox.flush()).rejects.toThrow(FlushUnsupportedError)
		expect(fake.requests.map((request) => request.op)).toEqual(['healthz'])
	})
})
