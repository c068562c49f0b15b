import { describe, expect, it } from 'vitest'
import { parseExecuteRequest } from '../../../src/agent/executions/execute-request.js'
import type { ExecutionProcess } from '../../../src/agent/executions/execution-process.js'
import { ExecutionRegistry } from '../../../src/agent/executions/execution-registry.js'
import { RetainedOutput } from '../../../src/agent/executions/retained-output.js'
import { loadAgentConfig, MiB } from '../../../src/agent/handler/config.js'
import { AgentConfigError } from '../../../src/agent/handler/config-error.js'
import { OpRefusal } from '../../../src/agent/handler/op-refusal.js'

const LISTEN = { NAMZU_AGENT_UNIX_PATH: '/tmp/unused.sock' }
const LIMITS = { maxTimeoutMs: 60_000, defaultTimeoutMs: 1000, defaultMaxOutputBytes: 100 }
const ID = 'exec_2f1b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d'

describe('retained-output settings', () => {
	it('defaults to 1 MiB per log, 32 logs, a 10 minute retention and a 30 minute timeout ceiling', () => {
		expect(loadAgentConfig(LISTEN)).toMatchObject({
			executionLogBytes: MiB,
			maxRetainedOutputLogs: 32,
			executionRetainedTtlMs: 600_000,
			maxTimeoutMs: 1_800_000,
		})
	})

	it.each([
		'NAMZU_AGENT_EXECUTION_LOG_BYTES',
		'NAMZU_AGENT_MAX_RETAINED_OUTPUT_LOGS',
		'NAMZU_AGENT_EXECUTION_RETAINED_TTL_MS',
	])('refuses startup on a bad %s, naming it', (name) => {
		expect(() => loadAgentConfig({ ...LISTEN, [name]: '0' })).toThrow(AgentConfigError)
		expect(() => loadAgentConfig({ ...LISTEN, [name]: 'lots' })).toThrow(name)
	})
})

describe('parseExecuteRequest retainOutput', () => {
	it.each([
		[{ command: 'true', executionId: ID, retainOutput: true }, { retainOutput: true }],
		[{ command: 'true', executionId: ID, retainOutput: false }, {}],
		[{ command: 'true', executionId: ID }, {}],
	])('accepts %j', (body, expected) => {
		const parsed = parseExecuteRequest(body, LIMITS)
		expect(parsed.retainOutput).toBe((expected as { retainOutput?: boolean }).retainOutput)
	})

	it.each([
		[{ command: 'true', retainOutput: true }, 'retain_requires_execution_id'],
		[{ command: 'true', executionId: ID, retainOutput: 'yes' }, 'invalid_retain_output'],
		[{ command: 'true', keepDescendants: 'no' }, 'invalid_keep_descendants'],
	])('refuses %j with %s', (body, error) => {
		try {
			parseExecuteRequest(body, LIMITS)
			expect.unreachable()
		} catch (failure) {
			expect(failure).toBeInstanceOf(OpRefusal)
			expect((failure as OpRefusal).error).toContain(error)
		}
	})
})

describe('parseExecuteRequest keepDescendants', () => {
	it.each([
		[{ command: 'true', keepDescendants: false }, false],
		[{ command: 'true', keepDescendants: true }, undefined],
		[{ command: 'true' }, undefined],
	])('resolves %j to %s', (body, expected) => {
		expect(parseExecuteRequest(body, LIMITS).keepDescendants).toBe(expected)
	})
})

describe('RetainedOutput', () => {
	it('hands live deltas to readers after a replay that ends exactly where they begin', () => {
		const output = new RetainedOutput(8)
		output.append('stdout', 'abcdef')
		const seen: unknown[] = []
		const follow = output.follow({ deliver: (event) => seen.push(event) }, 2)
		expect(follow).toMatchObject({ fromOffset: 2, droppedBytes: 0 })
		expect(follow.replay).toEqual([
			{ type: 'stdout_delta', data: 'cdef', offset: 2, nextOffset: 6 },
		])
		output.append('stderr', 'ghij')
		expect(seen).toEqual([{ type: 'stderr_delta', data: 'ghij', offset: 6, nextOffset: 10 }])
		follow.stop()
		output.append('stdout', 'k')
		expect(seen).toHaveLength(1)
		expect(output.follow({ deliver: () => {} }, 0)).toMatchObject({
			fromOffset: 3,
			droppedBytes: 3,
		})
	})
})

describe('ExecutionRegistry retained capacity', () => {
	const idle = (): ExecutionProcess => ({
		pgid: 1,
		outcome: new Promise(() => {}),
		terminate: () => Promise.resolve('killed'),
		kill: () => {},
		writeStdin: () => Promise.resolve(false),
		signal: () => false,
	})

	it('refuses past maxRetainedLogs with the state reserved, and the reservation stays usable', () => {
		const registry = new ExecutionRegistry({
			leaseTtlMs: 10_000,
			terminalTtlMs: 10_000,
			maxTracked: 10,
			confirmTimeoutMs: 100,
			maxRetainedLogs: 1,
		})
		const first = registry.reserve().executionId
		const second = registry.reserve().executionId
		registry.startRetained(first, idle)
		expect(() => registry.startRetained(second, idle)).toThrow(
			'retained_output_capacity: limit 1 (NAMZU_AGENT_MAX_RETAINED_OUTPUT_LOGS)',
		)
		expect(registry.stateOf(second)).toBe('reserved')
		registry.start(second, idle)
		expect(registry.stateOf(second)).toBe('running')
	})
})
