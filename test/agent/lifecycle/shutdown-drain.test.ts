/**
 * The bounded SIGTERM drain against the real agent process: it stops the workload with the quiesce
 * routine, flushes, and exits 0; a repeated SIGTERM is ignored; SIGINT and SIGQUIT end it at once.
 */
import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { openAgentStream } from '../agent-stream.js'
import {
	delay,
	isAlive,
	type LifecycleAgent,
	startLifecycleAgent,
	waitUntil,
} from './lifecycle-agent.js'

let agent: LifecycleAgent | undefined

afterEach(async () => {
	await agent?.stop()
	agent = undefined
})

async function startStubborn(started: LifecycleAgent): Promise<number> {
	const pidFile = join(started.workspace, 'stubborn.pid')
	openAgentStream(
		{ socketPath: started.socketPath },
		{
			op: 'execute',
			body: { command: '/bin/sh', args: ['-c', `trap '' TERM; echo $$ > ${pidFile}; sleep 30`] },
		},
	)
	await waitUntil(async () => (await readFile(pidFile, 'utf8').catch(() => '')).trim() !== '')
	return Number((await readFile(pidFile, 'utf8')).trim())
}

describe('SIGTERM drain', () => {
	it('stops a SIGTERM-ignoring process, flushes the workspace, and exits 0 before the deadline', async () => {
		agent = await startLifecycleAgent({
			env: {
				NAMZU_AGENT_SHUTDOWN_DEADLINE_MS: '8000',
				NAMZU_AGENT_FLUSH_COMMAND: 'echo flushed > "$1/.flushed"',
			},
		})
		const pid = await startStubborn(agent)
		agent.process.kill('SIGTERM')
		expect(await agent.exited).toEqual({ code: 0, signal: null })
		expect(await isAlive(pid)).toBe(false)
		expect((await readFile(join(agent.workspace, '.flushed'), 'utf8')).trim()).toBe('flushed')
		expect(agent.stderr()).toContain('shutdown quiesce (owned-sessions) stopped')
		expect(agent.stderr()).not.toContain('hit its deadline')
	})

	it('stops accepting connections once the drain has begun', async () => {
		agent = await startLifecycleAgent({
			env: { NAMZU_AGENT_QUIESCE_GRACE_MS: '1500', NAMZU_AGENT_SHUTDOWN_DEADLINE_MS: '8000' },
		})
		await startStubborn(agent)
		agent.process.kill('SIGTERM')
		await waitUntil(() => agent?.stderr().includes('draining') ?? false)
		await expect(stat(agent.socketPath)).rejects.toThrow()
		expect(await agent.exited).toEqual({ code: 0, signal: null })
	})

	it('logs and ignores a repeated SIGTERM; the drain goes on and still exits 0', async () => {
		agent = await startLifecycleAgent({
			env: { NAMZU_AGENT_QUIESCE_GRACE_MS: '1500', NAMZU_AGENT_SHUTDOWN_DEADLINE_MS: '8000' },
		})
		const pid = await startStubborn(agent)
		agent.process.kill('SIGTERM')
		await waitUntil(() => agent?.stderr().includes('draining') ?? false)
		agent.process.kill('SIGTERM')
		await waitUntil(() => agent?.stderr().includes('SIGTERM received again') ?? false)
		await delay(100)
		expect(agent.process.exitCode).toBeNull()
		expect(agent.process.signalCode).toBeNull()
		expect(await agent.exited).toEqual({ code: 0, signal: null })
		expect(await isAlive(pid)).toBe(false)
	})

	it('exits 0 within the deadline when the flush cannot finish in the time left', async () => {
		agent = await startLifecycleAgent({
			env: {
				NAMZU_AGENT_SHUTDOWN_DEADLINE_MS: '600',
				NAMZU_AGENT_FLUSH_TIMEOUT_MS: '10000',
				NAMZU_AGENT_FLUSH_COMMAND: 'sleep 30',
			},
		})
		agent.process.kill('SIGTERM')
		expect(await agent.exited).toEqual({ code: 0, signal: null })
		// The flush is cut at what is left of the deadline, or the watchdog ends the drain there.
		expect(agent.stderr()).toMatch(/shutdown flush: the flush did not finish|hit its deadline/)
	})

	it.each(['SIGINT', 'SIGQUIT'] as const)(
		'%s is not intercepted and ends the agent at once',
		async (name) => {
			agent = await startLifecycleAgent({ env: { NAMZU_AGENT_QUIESCE_GRACE_MS: '1500' } })
			await startStubborn(agent)
			agent.process.kill(name)
			expect(await agent.exited).toEqual({ code: null, signal: name })
			expect(agent.stderr()).not.toContain('draining')
		},
	)
})
