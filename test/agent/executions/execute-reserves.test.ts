/**
 * `execute-reserves` on the real agent: an `execute` with `reserve: true` runs an id the agent has
 * not seen in one request; a `cancel-execution` with `fence: true` of an unseen id fences it, so an
 * `execute` arriving after it is refused and the command never runs. Without `fence` an unseen id
 * is still `unknown_execution` (the two-step path's meaning), and an agent with the feature switched
 * off (`NAMZU_AGENT_EXECUTE_RESERVES=0`) neither advertises nor honours either field.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mintExecutionId } from '../../../src/wire/execution-id.js'
import { EXECUTE_RESERVES_FEATURE } from '../../../src/wire/features.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { delay, lastFrame, rawRequest, streamText } from '../agent-test-kit.js'

function execute(agent: StartedAgent, body: Record<string, unknown>) {
	return rawRequest(agent, { op: 'execute', body })
}

async function cancel(agent: StartedAgent, body: Record<string, unknown>) {
	return (await rawRequest(agent, { op: 'cancel-execution', body })).frames[0]
}

async function features(agent: StartedAgent): Promise<unknown> {
	return (await rawRequest(agent, { op: 'healthz' })).frames[0]?.features
}

describe('execute-reserves on an agent that has it', () => {
	let agent: StartedAgent
	beforeAll(async () => {
		agent = await startAgent()
	})
	afterAll(async () => {
		await agent.stop()
	})

	it('advertises execute-reserves in healthz', async () => {
		expect(await features(agent)).toContain(EXECUTE_RESERVES_FEATURE)
	})

	it('runs an unseen id in one execute with reserve: true, and a cancel then finds it completed', async () => {
		const executionId = mintExecutionId()
		const exchange = await execute(agent, {
			executionId,
			reserve: true,
			command: 'sh',
			args: ['-c', 'echo one-trip'],
		})
		expect(streamText(exchange, 'stdout')).toBe('one-trip\n')
		expect(lastFrame(exchange)).toMatchObject({ type: 'result', exitCode: 0 })
		expect(await cancel(agent, { executionId, fence: true })).toMatchObject({
			ok: true,
			state: 'completed',
			started: true,
		})
	})

	it('a fencing cancel of an unseen id answers cancelled, never started; the late execute is refused and never runs', async () => {
		const executionId = mintExecutionId()
		expect(await cancel(agent, { executionId, fence: true })).toMatchObject({
			ok: true,
			state: 'cancelled',
			started: false,
		})
		const late = await execute(agent, {
			executionId,
			reserve: true,
			command: 'touch',
			args: ['fenced-marker'],
		})
		expect(String(lastFrame(late)?.error)).toMatch(/^execution_cancelled/)
		await delay(200)
		expect(existsSync(join(agent.workspace, 'fenced-marker'))).toBe(false)
		// Asked again, the answer is the same: the id stays fenced.
		expect(await cancel(agent, { executionId, fence: true })).toMatchObject({
			state: 'cancelled',
			started: false,
		})
	})

	it('a cancel without fence of an unseen id is still unknown_execution, and fences nothing', async () => {
		const executionId = mintExecutionId()
		expect(String((await cancel(agent, { executionId }))?.error)).toMatch(/^unknown_execution/)
		const exchange = await execute(agent, {
			executionId,
			reserve: true,
			command: 'sh',
			args: ['-c', 'echo ran'],
		})
		expect(streamText(exchange, 'stdout')).toBe('ran\n')
	})

	it('an execute with reserve: true of an id already run is refused, not run twice', async () => {
		const executionId = mintExecutionId()
		const body = { executionId, reserve: true, command: 'sh', args: ['-c', 'echo x >> twice'] }
		expect(lastFrame(await execute(agent, body))).toMatchObject({ type: 'result', exitCode: 0 })
		const again = await execute(agent, body)
		expect(String(lastFrame(again)?.error)).toMatch(/^execution_not_reserved/)
		const { readFile } = await import('node:fs/promises')
		expect(await readFile(join(agent.workspace, 'twice'), 'utf8')).toBe('x\n')
	})

	it('an execute with reserve: true claims an id reserved before by reserve-execution', async () => {
		const executionId = mintExecutionId()
		await rawRequest(agent, { op: 'reserve-execution', body: { executionId } })
		const exchange = await execute(agent, {
			executionId,
			reserve: true,
			command: 'sh',
			args: ['-c', 'echo claimed'],
		})
		expect(streamText(exchange, 'stdout')).toBe('claimed\n')
	})

	it('refuses reserve: true without an execution id', async () => {
		const exchange = await execute(agent, { reserve: true, command: 'true' })
		expect(String(lastFrame(exchange)?.error)).toMatch(/^invalid_execution_id/)
	})
})

describe('execute-reserves switched off (NAMZU_AGENT_EXECUTE_RESERVES=0): the old agent', () => {
	let agent: StartedAgent
	beforeAll(async () => {
		agent = await startAgent({ env: { NAMZU_AGENT_EXECUTE_RESERVES: '0' } })
	})
	afterAll(async () => {
		await agent.stop()
	})

	it('does not advertise execute-reserves', async () => {
		expect(await features(agent)).not.toContain(EXECUTE_RESERVES_FEATURE)
	})

	it('ignores fence: an unseen id is unknown_execution', async () => {
		const reply = await cancel(agent, { executionId: mintExecutionId(), fence: true })
		expect(String(reply?.error)).toMatch(/^unknown_execution/)
	})

	it('ignores reserve: an execute of an unseen id is unknown_execution and runs nothing', async () => {
		const exchange = await execute(agent, {
			executionId: mintExecutionId(),
			reserve: true,
			command: 'touch',
			args: ['old-marker'],
		})
		expect(String(lastFrame(exchange)?.error)).toMatch(/^unknown_execution/)
		expect(existsSync(join(agent.workspace, 'old-marker'))).toBe(false)
	})
})
