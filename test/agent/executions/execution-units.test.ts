import { describe, expect, it } from 'vitest'
import {
	parseExecuteRequest,
	resolveTimeoutMs,
} from '../../../src/agent/executions/execute-request.js'
import { settleOutcome } from '../../../src/agent/executions/execution-registry.js'
import { OutputCapture } from '../../../src/agent/executions/output-capture.js'
import { OpRefusal } from '../../../src/agent/handler/op-refusal.js'
import { isExecutionId, mintExecutionId } from '../../../src/wire/execution-id.js'

const limits = { maxTimeoutMs: 10_000, defaultTimeoutMs: 300_000, defaultMaxOutputBytes: 1024 }

function refusalOf(fn: () => unknown): string | undefined {
	try {
		fn()
	} catch (error) {
		if (error instanceof OpRefusal) return error.error
		throw error
	}
	return undefined
}

describe('OutputCapture', () => {
	it('joins a multi-byte character split across chunks into one piece of text', () => {
		const capture = new OutputCapture(100)
		const euro = Buffer.from('€', 'utf8')
		expect(capture.push(euro.subarray(0, 1))).toBe('')
		expect(capture.push(euro.subarray(1, 2))).toBe('')
		expect(capture.push(euro.subarray(2))).toBe('€')
		expect(capture.end()).toBe('')
		expect(capture.truncated).toBe(false)
	})

	it.each([
		{ name: 'under the cap', chunks: ['abc'], cap: 5, text: 'abc', truncated: false },
		{ name: 'exactly at the cap', chunks: ['abcde'], cap: 5, text: 'abcde', truncated: false },
		{
			name: 'over the cap in one chunk',
			chunks: ['abcdefg'],
			cap: 5,
			text: 'abcde',
			truncated: true,
		},
		{
			name: 'over the cap across chunks',
			chunks: ['abc', 'def', 'g'],
			cap: 5,
			text: 'abcde',
			truncated: true,
		},
		{
			name: 'a character cut by the cap is dropped',
			chunks: ['ab€'],
			cap: 4,
			text: 'ab',
			truncated: true,
		},
	])('$name', ({ chunks, cap, text, truncated }) => {
		const capture = new OutputCapture(cap)
		let out = ''
		for (const chunk of chunks) out += capture.push(Buffer.from(chunk, 'utf8'))
		out += capture.end()
		expect(out).toBe(text)
		expect(capture.truncated).toBe(truncated)
		expect(capture.bytes).toBeLessThanOrEqual(cap)
	})
})

describe('parseExecuteRequest', () => {
	it('applies defaults to a minimal body', () => {
		expect(parseExecuteRequest({ command: 'ls' }, limits)).toEqual({
			command: 'ls',
			args: [],
			timeoutMs: 10_000,
			maxOutputBytes: 1024,
		})
	})

	it.each([
		{ body: {}, error: 'missing_command' },
		{ body: { command: '' }, error: 'missing_command' },
		{ body: { command: 7 }, error: 'missing_command' },
		{ body: { command: 'ls', args: 'x' }, error: 'invalid_args: args must be an array of strings' },
		{ body: { command: 'ls', args: [1] }, error: 'invalid_args: args must be an array of strings' },
		{ body: { command: 'ls', env: { A: 1 } }, error: 'invalid_env: env must map names to strings' },
		{ body: { command: 'ls', cwd: 3 }, error: 'invalid_cwd: cwd must be a string' },
		{ body: { command: 'ls', stdin: 3 }, error: 'invalid_stdin: stdin must be a string' },
		{ body: { command: 'ls', executionId: 'exec_x' }, error: 'invalid_execution_id' },
		{
			body: { command: 'ls', maxOutputBytes: 0 },
			error: 'invalid_max_output_bytes: maxOutputBytes must be a positive integer',
		},
	])('refuses $body with $error', ({ body, error }) => {
		expect(refusalOf(() => parseExecuteRequest(body, limits))).toBe(error)
	})

	it.each([
		{ value: undefined, expected: 10_000 },
		{ value: 1, expected: 1 },
		{ value: 10_000, expected: 10_000 },
	])('accepts timeoutMs $value as $expected', ({ value, expected }) => {
		expect(resolveTimeoutMs(value, limits)).toBe(expected)
	})

	it.each([0, -1, 1.5, 10_001, '5', Number.NaN])(
		'refuses timeoutMs %s naming the variable',
		(value) => {
			const error = refusalOf(() => resolveTimeoutMs(value, limits))
			expect(error).toMatch(/^invalid_timeout: /)
			expect(error).toContain('(NAMZU_SANDBOX_MAX_TIMEOUT_MS)')
		},
	)
})

describe('execution ids', () => {
	it('mints ids that the validator accepts', () => {
		for (let i = 0; i < 20; i++) expect(isExecutionId(mintExecutionId())).toBe(true)
	})

	it.each([
		['exec_2f1b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d', true],
		['exec_2F1B3C4D-5E6F-4A7B-8C9D-0E1F2A3B4C5D', false],
		['2f1b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d', false],
		['exec_2f1b3c4d-5e6f-0a7b-8c9d-0e1f2a3b4c5d', false],
		[42, false],
	])('judges %s as %s', (value, ok) => {
		expect(isExecutionId(value)).toBe(ok)
	})
})

describe('settleOutcome', () => {
	const result = {
		exitCode: 0,
		timedOut: false,
		durationMs: 5,
		stdoutTruncated: false,
		stderrTruncated: false,
	}
	it.each([
		{
			name: 'a clean exit without a cancel completes',
			cancel: false,
			state: 'completed',
			cancelled: undefined,
		},
		{
			name: 'a clean exit after a cancel was requested is cancelled',
			cancel: true,
			state: 'cancelled',
			cancelled: true,
		},
	])('$name', ({ cancel, state, cancelled }) => {
		const settled = settleOutcome({ kind: 'result', result }, cancel)
		expect(settled.state).toBe(state)
		expect(settled.event.type).toBe('result')
		expect(settled.event).toEqual({
			type: 'result',
			...result,
			...(cancelled ? { cancelled } : {}),
		})
	})

	it('marks a spawn failure failed and answers it as an error event', () => {
		expect(settleOutcome({ kind: 'error', error: 'spawn x ENOENT' }, false)).toEqual({
			state: 'failed',
			event: { type: 'error', error: 'spawn x ENOENT' },
		})
	})
})
