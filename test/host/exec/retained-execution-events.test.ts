import { describe, expect, it } from 'vitest'
import { parseRetainedExecutionEvent } from '../../../src/host/exec/retained-execution-events.js'
import { RemoteProtocolError } from '../../../src/host/refusals/refusal-errors.js'

const RESULT = { exitCode: 0, timedOut: false, durationMs: 3 }

describe('parseRetainedExecutionEvent', () => {
	it.each([
		[
			'execute',
			{ type: 'stdout_delta', data: 'a', offset: 0, nextOffset: 1 },
			{ kind: 'delta', stream: 'stdout', data: 'a', offset: 0, nextOffset: 1 },
		],
		[
			'attach-execution',
			{ type: 'attached', executionId: 'x', state: 'running', fromOffset: 5, droppedBytes: 5 },
			{ kind: 'attached', fromOffset: 5, droppedBytes: 5 },
		],
		[
			'execute',
			{ type: 'result', ...RESULT, cancelled: true },
			{ kind: 'result', cancelled: true },
		],
		[
			'attach-execution',
			{ type: 'attach_result', outcome: 'completed', started: true, result: RESULT, nextOffset: 1 },
			{ kind: 'attach-result', outcome: 'completed', started: true, cancelled: false },
		],
		[
			'attach-execution',
			{ type: 'error', error: 'output_not_retained', executionState: 'reserved' },
			{ kind: 'refused', error: 'output_not_retained', executionState: 'reserved' },
		],
	] as const)('reads a %s event %j', (op, event, expected) => {
		expect(parseRetainedExecutionEvent(op, { ...event })).toMatchObject(expected)
	})

	it.each([
		['execute', { type: 'stdout_delta', data: 'a' }],
		['execute', { type: 'stdout_delta', data: 'a', offset: 3, nextOffset: 2 }],
		['execute', { type: 'attached', fromOffset: 0, droppedBytes: 0 }],
		['attach-execution', { type: 'result', ...RESULT }],
		['attach-execution', { type: 'attach_result', outcome: 'running', started: true }],
		['attach-execution', { type: 'heartbeat' }],
	] as const)('refuses a %s event %j as a protocol error', (op, event) => {
		expect(() => parseRetainedExecutionEvent(op, { ...event })).toThrow(RemoteProtocolError)
	})
})
