import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { delay, isDeadOrZombie, lastFrame, openConnection, rawRequest } from '../agent-test-kit.js'

async function reserve(agent: StartedAgent): Promise<string> {
	const exchange = await rawRequest(agent, { op: 'reserve-execution' })
	const id = exchange.frames[0]?.executionId
	if (typeof id !== 'string') throw new Error(`no execution id: ${JSON.stringify(exchange.frames)}`)
	return id
}

async function cancel(agent: StartedAgent, executionId: string) {
	const exchange = await rawRequest(agent, { op: 'cancel-execution', body: { executionId } })
	return exchange.frames[0]
}

/** Starts a reserved execute and waits until the command has printed its first line. */
async function startRunning(agent: StartedAgent, command: string, args: string[]) {
	const executionId = await reserve(agent)
	const connection = openConnection(agent, { op: 'execute', body: { executionId, command, args } })
	const first = await connection.waitFor((frame) => frame.type === 'stdout_delta')
	return { executionId, connection, firstLine: String(first.data).trim() }
}

// NAMZU_AGENT_CANCEL_GRACE_MS is deliberately left unset: these tests pin the 250 ms default.
describe('cancel-execution with the default grace window', () => {
	let agent: StartedAgent
	beforeAll(async () => {
		agent = await startAgent()
	})
	afterAll(async () => {
		await agent.stop()
	})

	it('reports a SIGTERM-ignoring command that would finish by itself in ~400 ms as cancelled, never success', async () => {
		const { executionId, connection } = await startRunning(agent, 'sh', [
			'-c',
			'trap "" TERM; echo started; sleep 0.4; echo finished',
		])
		const ack = await cancel(agent, executionId)
		expect(ack).toMatchObject({ ok: true, state: 'cancelled', started: true })
		expect(ack?.result).toMatchObject({ cancelled: true })
		const result = await connection.waitFor((frame) => frame.type === 'result')
		expect(result).toMatchObject({ type: 'result', cancelled: true })
		expect(connection.frames.at(-1)).toBe(result)
	})

	it('SIGKILLs a SIGTERM-ignoring command once the grace window ends, so its later work never happens', async () => {
		const { executionId, connection } = await startRunning(agent, 'sh', [
			'-c',
			'trap "" TERM; echo started; sleep 1.5; touch late-marker',
		])
		const ack = await cancel(agent, executionId)
		expect(ack).toMatchObject({ ok: true, state: 'cancelled', started: true })
		expect(ack?.result).toMatchObject({ signal: 'SIGKILL', cancelled: true, exitCode: -1 })
		const result = await connection.waitFor((frame) => frame.type === 'result')
		expect(result).toMatchObject({ signal: 'SIGKILL', cancelled: true })
		await delay(1_700)
		expect(existsSync(join(agent.workspace, 'late-marker'))).toBe(false)
	})

	it('lets a well-behaved SIGTERM handler finish its cleanup without being escalated to SIGKILL', async () => {
		const script = [
			"process.on('SIGTERM', () => {",
			"  require('node:fs').writeFileSync('cleaned-up', 'yes')",
			'  process.exit(0)',
			'})',
			"process.stdout.write('ready\\n')",
			'setInterval(() => {}, 1000)',
		].join('\n')
		const { executionId, connection } = await startRunning(agent, process.execPath, ['-e', script])
		const ack = await cancel(agent, executionId)
		expect(ack).toMatchObject({ ok: true, state: 'cancelled', started: true })
		expect(ack?.result).toMatchObject({ exitCode: 0, cancelled: true })
		expect(ack?.result).not.toHaveProperty('signal')
		expect(existsSync(join(agent.workspace, 'cleaned-up'))).toBe(true)
		await connection.waitFor((frame) => frame.type === 'result')
	})

	it('ends a command with default SIGTERM handling on SIGTERM, not SIGKILL', async () => {
		const { executionId } = await startRunning(agent, 'sh', ['-c', 'echo started; exec sleep 30'])
		const ack = await cancel(agent, executionId)
		expect(ack?.result).toMatchObject({ signal: 'SIGTERM', cancelled: true })
	})

	it('signals the whole process group, so children of the command die too', async () => {
		const { executionId, firstLine } = await startRunning(agent, 'sh', [
			'-c',
			'sleep 30 & echo $!; sleep 30',
		])
		const childPid = Number(firstLine)
		expect(childPid).toBeGreaterThan(0)
		expect(isDeadOrZombie(childPid)).toBe(false)
		const ack = await cancel(agent, executionId)
		expect(ack).toMatchObject({ ok: true, state: 'cancelled' })
		expect(isDeadOrZombie(childPid)).toBe(true)
	})

	it('answers a repeated cancel of a finished execution with the same acknowledgement', async () => {
		const { executionId } = await startRunning(agent, 'sh', ['-c', 'echo started; sleep 30'])
		const first = await cancel(agent, executionId)
		const second = await cancel(agent, executionId)
		expect(second).toEqual(first)
	})

	it('shares one outcome between concurrent cancels of the same run', async () => {
		const { executionId } = await startRunning(agent, 'sh', ['-c', 'trap "" TERM; echo s; sleep 5'])
		const [a, b] = await Promise.all([cancel(agent, executionId), cancel(agent, executionId)])
		expect(a).toEqual(b)
		expect(a).toMatchObject({ state: 'cancelled' })
	})

	it('cancels a reserved execution that never started with a synthetic result, and it can never start', async () => {
		const executionId = await reserve(agent)
		const ack = await cancel(agent, executionId)
		expect(ack).toEqual({
			ok: true,
			guestBootId: expect.any(String),
			state: 'cancelled',
			started: false,
			result: {
				exitCode: 1,
				timedOut: false,
				durationMs: 0,
				stdoutTruncated: false,
				stderrTruncated: false,
				cancelled: true,
			},
		})
		const late = await rawRequest(agent, {
			op: 'execute',
			body: { executionId, command: 'sh', args: ['-c', 'touch never-started'] },
		})
		expect(late.frames).toEqual([
			{ type: 'error', error: 'execution_cancelled', executionState: 'cancelled' },
		])
		expect(existsSync(join(agent.workspace, 'never-started'))).toBe(false)
	})

	it('reports a run that completed before the cancel as completed', async () => {
		const executionId = await reserve(agent)
		const done = await rawRequest(agent, {
			op: 'execute',
			body: { executionId, command: 'sh', args: ['-c', 'exit 4'] },
		})
		expect(lastFrame(done)).toMatchObject({ exitCode: 4 })
		const ack = await cancel(agent, executionId)
		expect(ack).toMatchObject({
			ok: true,
			state: 'completed',
			started: true,
			result: { exitCode: 4 },
		})
		expect(ack?.result).not.toHaveProperty('cancelled')
	})

	it('reports a run whose spawn failed as failed with the error', async () => {
		const executionId = await reserve(agent)
		await rawRequest(agent, { op: 'execute', body: { executionId, command: '/no/such/binary' } })
		const ack = await cancel(agent, executionId)
		expect(ack).toMatchObject({ ok: true, state: 'failed', started: false })
		expect(String(ack?.error)).toContain('ENOENT')
	})

	it('refuses a second execute on an id that is already running or finished', async () => {
		const { executionId } = await startRunning(agent, 'sh', ['-c', 'echo started; sleep 30'])
		const again = await rawRequest(agent, {
			op: 'execute',
			body: { executionId, command: 'true' },
		})
		expect(again.frames).toEqual([
			{ type: 'error', error: 'execution_not_reserved: running', executionState: 'running' },
		])
		await cancel(agent, executionId)
		const after = await rawRequest(agent, { op: 'execute', body: { executionId, command: 'true' } })
		expect(after.frames).toEqual([
			{ type: 'error', error: 'execution_not_reserved: cancelled', executionState: 'cancelled' },
		])
	})

	it.each([
		['an unknown id', 'exec_2f1b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d', 'unknown_execution'],
		['a malformed id', 'exec_not-a-uuid', 'invalid_execution_id'],
	])('refuses to cancel %s', async (_name, executionId, error) => {
		expect(await cancel(agent, executionId)).toEqual({
			ok: false,
			error,
			guestBootId: expect.any(String),
		})
	})

	it('refuses execute with a malformed or unknown execution id', async () => {
		const bad = await rawRequest(agent, {
			op: 'execute',
			body: { executionId: 'nope', command: 'true' },
		})
		expect(bad.frames).toEqual([{ type: 'error', error: 'invalid_execution_id' }])
		const unknown = await rawRequest(agent, {
			op: 'execute',
			body: { executionId: 'exec_2f1b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d', command: 'true' },
		})
		expect(unknown.frames).toEqual([{ type: 'error', error: 'unknown_execution' }])
	})
})

describe('reservation leases and capacity', () => {
	let agent: StartedAgent
	beforeAll(async () => {
		agent = await startAgent({
			env: {
				NAMZU_AGENT_EXECUTION_LEASE_TTL_MS: '300',
				NAMZU_AGENT_MAX_TRACKED_EXECUTIONS: '2',
			},
		})
	})
	afterAll(async () => {
		await agent.stop()
	})

	it('mints exec_<uuid v4> ids with a lease expiry NAMZU_AGENT_EXECUTION_LEASE_TTL_MS ahead', async () => {
		const before = Date.now()
		const exchange = await rawRequest(agent, { op: 'reserve-execution' })
		const reply = exchange.frames[0]
		expect(reply).toMatchObject({ ok: true, protocolVersion: 2 })
		expect(String(reply?.executionId)).toMatch(
			/^exec_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
		)
		expect(Number(reply?.leaseExpiresAt)).toBeGreaterThanOrEqual(before + 300)
	})

	it('lets an unused reservation lapse, after which it is unknown', async () => {
		const executionId = await reserve(agent)
		await delay(600)
		const late = await rawRequest(agent, { op: 'execute', body: { executionId, command: 'true' } })
		expect(late.frames).toEqual([{ type: 'error', error: 'unknown_execution' }])
	})

	it('refuses a reservation past NAMZU_AGENT_MAX_TRACKED_EXECUTIONS live records', async () => {
		await delay(400) // earlier tests' reservations lapse
		await reserve(agent)
		await reserve(agent)
		const third = await rawRequest(agent, { op: 'reserve-execution' })
		expect(third.frames[0]).toMatchObject({ ok: false, error: 'execution_capacity' })
		expect(String(third.frames[0]?.message)).toContain('NAMZU_AGENT_MAX_TRACKED_EXECUTIONS')
	})
})

describe('cancel-execution with NAMZU_AGENT_CANCEL_GRACE_MS set explicitly', () => {
	let agent: StartedAgent
	beforeAll(async () => {
		agent = await startAgent({ env: { NAMZU_AGENT_CANCEL_GRACE_MS: '3000' } })
	})
	afterAll(async () => {
		await agent.stop()
	})

	it('lengthens the window, and a command finishing inside it is still reported cancelled', async () => {
		const { executionId, connection } = await startRunning(agent, 'sh', [
			'-c',
			'trap "" TERM; echo started; sleep 0.5; touch finished-in-window',
		])
		const ack = await cancel(agent, executionId)
		// It ran to completion inside the longer window (no SIGKILL) ...
		expect(existsSync(join(agent.workspace, 'finished-in-window'))).toBe(true)
		expect(ack?.result).toMatchObject({ exitCode: 0 })
		expect(ack?.result).not.toHaveProperty('signal')
		// ... yet a requested cancel is never reported as a clean success.
		expect(ack).toMatchObject({ ok: true, state: 'cancelled', started: true })
		expect(ack?.result).toMatchObject({ cancelled: true })
		expect(await connection.waitFor((frame) => frame.type === 'result')).toMatchObject({
			cancelled: true,
		})
	})
})
