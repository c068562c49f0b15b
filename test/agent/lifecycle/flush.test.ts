/** The `flush` op against the real agent: the real `sync -f`, a slow or failing override, no sync. */
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { type LifecycleAgent, startLifecycleAgent } from './lifecycle-agent.js'

let agent: LifecycleAgent | undefined

afterEach(async () => {
	await agent?.stop()
	agent = undefined
})

describe('flush', () => {
	it('runs the real sync -f over the workspace and answers ok with its duration and workspace', async () => {
		agent = await startLifecycleAgent()
		expect((await agent.request('healthz')).features).toContain('flush')
		const reply = await agent.request('flush', {})
		expect(reply).toMatchObject({ ok: true, workspace: agent.workspace })
		expect(typeof reply.durationMs).toBe('number')
	})

	it('hands the override the workspace as $1 (and never a bare sync)', async () => {
		agent = await startLifecycleAgent({
			env: { NAMZU_AGENT_FLUSH_COMMAND: 'echo "$1" > "$1/flushed-here"' },
		})
		expect(await agent.request('flush', {})).toMatchObject({ ok: true })
		expect((await readFile(join(agent.workspace, 'flushed-here'), 'utf8')).trim()).toBe(
			agent.workspace,
		)
	})

	it('answers flush_unconfirmed when the flush outlives its timeout', async () => {
		agent = await startLifecycleAgent({ env: { NAMZU_AGENT_FLUSH_COMMAND: 'sleep 5' } })
		const reply = await agent.request('flush', { timeoutMs: 200 })
		expect(reply).toMatchObject({ ok: false, error: 'flush_unconfirmed' })
		expect(String(reply.message)).toContain('200 ms')
	})

	it('bounds the flush by NAMZU_AGENT_FLUSH_TIMEOUT_MS when the request names no timeout', async () => {
		agent = await startLifecycleAgent({
			env: { NAMZU_AGENT_FLUSH_COMMAND: 'sleep 5', NAMZU_AGENT_FLUSH_TIMEOUT_MS: '150' },
		})
		const reply = await agent.request('flush', {})
		expect(reply).toMatchObject({ ok: false, error: 'flush_unconfirmed' })
		expect(String(reply.message)).toContain('150 ms')
	})

	it('answers flush_unconfirmed with the exit status when the flush fails', async () => {
		agent = await startLifecycleAgent({
			env: { NAMZU_AGENT_FLUSH_COMMAND: 'echo disk on fire >&2; exit 3' },
		})
		const reply = await agent.request('flush', {})
		expect(reply).toMatchObject({ ok: false, error: 'flush_unconfirmed' })
		expect(String(reply.message)).toMatch(/status 3: disk on fire/)
	})

	it('refuses a timeout that is not a positive integer with flush_invalid_timeout', async () => {
		agent = await startLifecycleAgent()
		for (const timeoutMs of [0, -1, 1.5, 'soon']) {
			expect(await agent.request('flush', { timeoutMs })).toMatchObject({
				ok: false,
				error: 'flush_invalid_timeout',
			})
		}
	})

	it('does not advertise flush, and answers flush_unsupported, when sync is not on PATH', async () => {
		agent = await startLifecycleAgent({ path: '/nonexistent' })
		const health = await agent.request('healthz')
		expect(health.protocolVersion).toBe(2)
		expect(health.features).not.toContain('flush')
		expect(await agent.request('flush', {})).toMatchObject({
			ok: false,
			error: 'flush_unsupported',
		})
	})
})
