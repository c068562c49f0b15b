import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { rawRequest } from '../../helpers/raw-agent-client.js'
import {
	attach,
	deltaText,
	executeRetained,
	GATED_COMMAND,
	isDelta,
	newExecutionId,
	reserve,
	waitForFile,
} from './execution-kit.js'

describe('retained executions on the real agent', () => {
	let agent: StartedAgent
	beforeAll(async () => {
		agent = await startAgent({ env: { NAMZU_AGENT_CANCEL_GRACE_MS: '50' } })
	})
	afterAll(async () => {
		await agent.stop()
	})

	it('gives every delta of a retained run an offset and nextOffset tiling one byte space from 0', async () => {
		const id = newExecutionId()
		await reserve(agent, id)
		const stream = executeRetained(agent, id, 'printf abc; printf de >&2; printf "é\\n"')
		const result = await stream.waitFor((event) => event.type === 'result')
		expect(result).toMatchObject({ exitCode: 0 })
		const deltas = stream.events.filter(isDelta)
		let expected = 0
		for (const delta of deltas) {
			expect(delta.offset).toBe(expected)
			expected = Number(delta.nextOffset)
			expect(expected - Number(delta.offset)).toBe(Buffer.byteLength(String(delta.data)))
		}
		expect(expected).toBe(Buffer.byteLength('abcdeé\n'))
		await stream.closed()
		expect(stream.terminated()).toBe(true)
	})

	it('keeps a retained run going when its execute connection drops; attach from 0 replays everything, then the live tail and the attach_result', async () => {
		const id = newExecutionId()
		await reserve(agent, id)
		const cmd = GATED_COMMAND.replace('printed-one', 'kept-one').replaceAll('go', 'kept-go')
		const stream = executeRetained(agent, id, cmd)
		await stream.waitFor((event) => event.type === 'stdout_delta')
		stream.close()
		await stream.closed()
		await waitForFile(agent.workspace, 'kept-one')
		const reserved = await reserve(agent, id)
		expect(reserved).toMatchObject({ state: 'running', retainedOutput: true, outputOffset: 4 })

		const attached = attach(agent, id, 0)
		const head = await attached.waitFor((event) => event.type === 'attached')
		expect(head).toMatchObject({
			executionId: id,
			state: 'running',
			fromOffset: 0,
			droppedBytes: 0,
		})
		await attached.waitFor((event) => event.type === 'stdout_delta')
		writeFileSync(join(agent.workspace, 'kept-go'), '')
		const final = await attached.waitFor((event) => event.type === 'attach_result')
		await attached.closed()
		expect(deltaText(attached.events)).toBe('one\ntwo\n')
		expect(final).toMatchObject({
			executionId: id,
			outcome: 'completed',
			started: true,
			nextOffset: 8,
			result: { exitCode: 7, timedOut: false },
		})
		expect(attached.terminated()).toBe(true)
	})

	it('replays from the offset an attach asks for, not from the start', async () => {
		const id = newExecutionId()
		await reserve(agent, id)
		const stream = executeRetained(agent, id, 'echo first; echo second')
		await stream.waitFor((event) => event.type === 'result')
		const attached = attach(agent, id, 6)
		await attached.waitFor((event) => event.type === 'attach_result')
		expect(attached.events[0]).toMatchObject({ type: 'attached', fromOffset: 6, droppedBytes: 0 })
		expect(deltaText(attached.events)).toBe('second\n')
		expect(attached.events.filter(isDelta)[0]).toMatchObject({ offset: 6 })
	})

	it('starts the same execution id once: a second execute is refused with the state and the command runs once', async () => {
		const id = newExecutionId()
		await reserve(agent, id)
		const first = executeRetained(agent, id, 'echo ran >> runs-once; sleep 0.3')
		await waitForFile(agent.workspace, 'runs-once')
		const second = executeRetained(agent, id, 'echo ran >> runs-once')
		const refusal = await second.waitFor((event) => event.type === 'error')
		expect(refusal).toMatchObject({
			error: 'execution_not_reserved: running',
			executionState: 'running',
		})
		await first.waitFor((event) => event.type === 'result')
		const again = await reserve(agent, id)
		expect(again).toMatchObject({ ok: true, executionId: id, state: 'completed' })
		expect(readFileSync(join(agent.workspace, 'runs-once'), 'utf8')).toBe('ran\n')
	})

	it('refuses attach with invalid_execution_id, unknown_execution, output_not_retained (with the state) and invalid_offset', async () => {
		const attachError = async (body: object) => {
			const exchange = await rawRequest(agent, { op: 'attach-execution', body })
			expect(exchange.terminated).toBe(true)
			return exchange.frames[0]
		}
		expect(await attachError({ executionId: 'exec_nope' })).toEqual({
			type: 'error',
			error: 'invalid_execution_id',
		})
		expect(await attachError({ executionId: newExecutionId() })).toEqual({
			type: 'error',
			error: 'unknown_execution',
		})
		const reservedId = newExecutionId()
		await reserve(agent, reservedId)
		expect(await attachError({ executionId: reservedId })).toEqual({
			type: 'error',
			error: 'output_not_retained',
			executionState: 'reserved',
		})
		const plainId = newExecutionId()
		await reserve(agent, plainId)
		await rawRequest(agent, {
			op: 'execute',
			body: { executionId: plainId, command: 'true' },
		})
		expect(await attachError({ executionId: plainId })).toMatchObject({
			error: 'output_not_retained',
			executionState: 'completed',
		})
		const retainedId = newExecutionId()
		await reserve(agent, retainedId)
		await executeRetained(agent, retainedId, 'printf 12345').waitFor((e) => e.type === 'result')
		expect(await attachError({ executionId: retainedId, fromOffset: 6 })).toMatchObject({
			error: 'invalid_offset',
			executionState: 'completed',
			nextOffset: 5,
		})
		expect(await attachError({ executionId: retainedId, fromOffset: -1 })).toMatchObject({
			error: 'invalid_offset',
		})
	})

	it('refuses retainOutput without an executionId, and never puts offsets on an unretained run', async () => {
		const refused = await rawRequest(agent, {
			op: 'execute',
			body: { command: 'true', retainOutput: true },
		})
		expect(refused.frames).toEqual([{ type: 'error', error: 'retain_requires_execution_id' }])
		const id = newExecutionId()
		await reserve(agent, id)
		const plain = await rawRequest(agent, {
			op: 'execute',
			body: { executionId: id, command: 'echo', args: ['plain'] },
		})
		const delta = plain.frames.find(isDelta)
		expect(delta).toEqual({ type: 'stdout_delta', data: 'plain\n' })
	})

	it('treats an attach as an observer only: a frame from the attacher drops it and the command runs on', async () => {
		const id = newExecutionId()
		await reserve(agent, id)
		const cmd = GATED_COMMAND.replace('printed-one', 'obs-one').replaceAll('go', 'obs-go')
		const runner = executeRetained(agent, id, cmd)
		await waitForFile(agent.workspace, 'obs-one')
		const observer = attach(agent, id)
		await observer.waitFor((event) => event.type === 'attached')
		observer.send({ type: 'kill', signal: 'SIGKILL' })
		await observer.closed()
		expect(observer.terminated()).toBe(false)
		writeFileSync(join(agent.workspace, 'obs-go'), '')
		const result = await runner.waitFor((event) => event.type === 'result')
		expect(result).toMatchObject({ exitCode: 7 })
		expect(result).not.toHaveProperty('cancelled')
	})
})

describe('retained output limits', () => {
	let agent: StartedAgent
	beforeAll(async () => {
		agent = await startAgent({
			env: {
				NAMZU_AGENT_EXECUTION_LOG_BYTES: '64',
				NAMZU_AGENT_MAX_RETAINED_OUTPUT_LOGS: '2',
				NAMZU_AGENT_EXECUTION_RETAINED_TTL_MS: '400',
			},
		})
	})
	afterAll(async () => {
		await agent.stop()
	})

	it('keeps only NAMZU_AGENT_EXECUTION_LOG_BYTES of a retained run and reports what an attach from 0 lost as droppedBytes', async () => {
		const id = newExecutionId()
		await reserve(agent, id)
		const line = `${'x'.repeat(99)}\n`
		await executeRetained(agent, id, `for i in 1 2; do printf '${line}'; done`).waitFor(
			(event) => event.type === 'result',
		)
		const attached = attach(agent, id, 0)
		const final = await attached.waitFor((event) => event.type === 'attach_result')
		expect(attached.events[0]).toMatchObject({ fromOffset: 136, droppedBytes: 136 })
		expect(deltaText(attached.events)).toBe(line.repeat(2).slice(136))
		expect(final).toMatchObject({ nextOffset: 200, outcome: 'completed' })
	})

	it('refuses a retained run past NAMZU_AGENT_MAX_RETAINED_OUTPUT_LOGS, naming the variable, while an unretained one still runs', async () => {
		// Let the previous case's retained record reach its TTL so the count starts at zero.
		await new Promise((resolve) => setTimeout(resolve, 600))
		const ids = [newExecutionId(), newExecutionId()]
		for (const id of ids) {
			await reserve(agent, id)
			executeRetained(agent, id, 'sleep 0.6')
		}
		await new Promise((resolve) => setTimeout(resolve, 100))
		const over = newExecutionId()
		await reserve(agent, over)
		const refused = await rawRequest(agent, {
			op: 'execute',
			body: { executionId: over, command: 'true', retainOutput: true },
		})
		expect(refused.frames).toEqual([
			{
				type: 'error',
				error: 'retained_output_capacity: limit 2 (NAMZU_AGENT_MAX_RETAINED_OUTPUT_LOGS)',
				executionState: 'reserved',
			},
		])
		const plain = await rawRequest(agent, {
			op: 'execute',
			body: { executionId: over, command: 'echo', args: ['ok'] },
		})
		expect(plain.frames.at(-1)).toMatchObject({ type: 'result', exitCode: 0 })
	})

	it('starts a fresh command for the same id once NAMZU_AGENT_EXECUTION_RETAINED_TTL_MS has passed', async () => {
		// The previous case's runs end after 0.6 s and are held 0.4 s more.
		await new Promise((resolve) => setTimeout(resolve, 1200))
		const id = newExecutionId()
		await reserve(agent, id)
		await executeRetained(agent, id, 'echo ran >> ttl-runs').waitFor((e) => e.type === 'result')
		expect(await reserve(agent, id)).toMatchObject({ state: 'completed', retainedOutput: true })
		await new Promise((resolve) => setTimeout(resolve, 1500))
		expect(await reserve(agent, id)).toMatchObject({ ok: true, executionId: id, state: 'reserved' })
		await executeRetained(agent, id, 'echo ran >> ttl-runs').waitFor((e) => e.type === 'result')
		expect(readFileSync(join(agent.workspace, 'ttl-runs'), 'utf8')).toBe('ran\nran\n')
	})
})
