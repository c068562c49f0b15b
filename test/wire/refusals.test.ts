/** The refusal codes both ends share: their table, the text format and its parse (pure). */
import { describe, expect, it } from 'vitest'
import {
	AGENT_REFUSAL,
	AGENT_REFUSAL_CODES,
	formatRefusal,
	isAgentRefusalCode,
	isErrnoCode,
	parseRefusal,
} from '../../src/wire/refusals.js'

describe('AGENT_REFUSAL', () => {
	it('names every code by itself, once', () => {
		for (const [key, code] of Object.entries(AGENT_REFUSAL)) expect(code).toBe(key)
		expect(new Set(AGENT_REFUSAL_CODES).size).toBe(AGENT_REFUSAL_CODES.length)
		expect(AGENT_REFUSAL_CODES.every((code) => /^[a-z][a-z0-9_]*[a-z0-9]$/.test(code))).toBe(true)
	})

	it.each(AGENT_REFUSAL_CODES)(
		'%s survives the format and the parse, with and without a detail',
		(code) => {
			expect(parseRefusal(formatRefusal(code))).toEqual({ text: code, code, known: code })
			expect(parseRefusal(formatRefusal(code, 'limit 3 (X)'))).toEqual({
				text: `${code}: limit 3 (X)`,
				code,
				known: code,
				detail: 'limit 3 (X)',
			})
		},
	)
})

describe('parseRefusal', () => {
	it.each([
		['unknown_op: quiesce', { code: 'unknown_op', known: 'unknown_op', detail: 'quiesce' }],
		[
			'execution_not_reserved: running',
			{ code: 'execution_not_reserved', known: 'execution_not_reserved', detail: 'running' },
		],
		['invalid_cwd:x', { code: 'invalid_cwd', known: 'invalid_cwd', detail: 'x' }],
		[
			'ENOENT: no such file or directory, open /w/a',
			{ code: 'ENOENT', detail: 'no such file or directory, open /w/a' },
		],
		['spawn /bin/nope ENOENT', { code: 'spawn' }],
		['unknown_execution_extra', { code: 'unknown_execution_extra' }],
		['session_capacity limit', { code: 'session_capacity' }],
		['', { code: '' }],
		[': detail', { code: '' }],
	])('%j reads as %j', (text, expected) => {
		const parsed = parseRefusal(text)
		expect(parsed).toMatchObject({ text, ...expected })
		if (!('known' in expected)) expect(parsed.known).toBeUndefined()
		if (!('detail' in expected)) expect(parsed.detail).toBeUndefined()
	})

	it('keeps the fields a refusal carries beside its text', () => {
		expect(
			parseRefusal('output_not_retained', { executionState: 'reserved', nextOffset: 4 }),
		).toEqual({
			text: 'output_not_retained',
			code: 'output_not_retained',
			known: 'output_not_retained',
			executionState: 'reserved',
			nextOffset: 4,
		})
	})

	it('tells codes and errno names apart', () => {
		expect(isAgentRefusalCode('path_escapes_workspace')).toBe(true)
		expect(isAgentRefusalCode('path_escape')).toBe(false)
		expect(isAgentRefusalCode(3)).toBe(false)
		expect(isErrnoCode('ENOENT')).toBe(true)
		expect(isErrnoCode('E2BIG')).toBe(true)
		expect(isErrnoCode('unknown_op')).toBe(false)
	})
})
