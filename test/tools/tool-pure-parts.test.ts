import { describe, expect, it } from 'vitest'
import { SandboxArgumentError } from '../../src/index.js'
import { applyExactEdit, countOccurrences } from '../../src/tools/edit-match.js'
import { sliceRead } from '../../src/tools/exec-cursor.js'
import { compileGrepQuery, MAX_MATCH_LINE_CHARS, matchLines } from '../../src/tools/grep-matcher.js'
import { selectLines } from '../../src/tools/line-range.js'
import {
	boundText,
	truncationMarker,
	utf8PrefixLength,
	utf8SuffixStart,
} from '../../src/tools/output-budget.js'
import { validateToolArguments } from '../../src/tools/tool-arguments.js'
import {
	EditMatchAmbiguousError,
	EditMatchNotFoundError,
	GrepPatternTimeoutError,
} from '../../src/tools/tool-errors.js'
import type { ToolObjectSchema } from '../../src/tools/tool-types.js'

const SCHEMA: ToolObjectSchema = {
	type: 'object',
	properties: {
		path: { type: 'string', minLength: 1, maxLength: 8 },
		n: { type: 'integer', minimum: 1, maximum: 10 },
		flag: { type: 'boolean' },
		kind: { type: 'string', enum: ['a', 'b'] },
		id: { type: 'string', pattern: '^x-[0-9]+$' },
		argv: { type: 'array', minItems: 1, maxItems: 2, items: { type: 'string' } },
		env: {
			type: 'object',
			properties: {},
			additionalProperties: { type: 'string' },
			maxProperties: 2,
		},
	},
	required: ['path'],
	additionalProperties: false,
}

describe('validateToolArguments', () => {
	it.each([
		['a minimal call', { path: 'a' }],
		[
			'every property',
			{ path: 'a', n: 3, flag: true, kind: 'b', id: 'x-1', argv: ['a'], env: { A: '1' } },
		],
		['an absent optional left undefined', { path: 'a', n: undefined }],
	])('admits %s', (_label, args) => {
		expect(validateToolArguments('t', SCHEMA, args)).toEqual(args)
	})

	it.each([
		['not an object', 'x', 'arguments', 'an object', 'a string of 1 characters'],
		['a missing required argument', {}, 'path', 'present', 'nothing'],
		[
			'an unknown argument',
			{ path: 'a', other: 1 },
			'other',
			'no such argument',
			'an unknown argument',
		],
		['a wrong type', { path: 3 }, 'path', 'a string of at most 8 characters', 'an integer'],
		[
			'an empty string',
			{ path: '' },
			'path',
			'a string of at most 8 characters',
			'a string of 0 characters',
		],
		['a fraction', { path: 'a', n: 1.5 }, 'n', 'an integer in 1..10', 'a number'],
		['out of range', { path: 'a', n: 11 }, 'n', 'an integer in 1..10', 'an integer'],
		['NaN', { path: 'a', n: Number.NaN }, 'n', 'an integer in 1..10', 'NaN'],
		['an explicit null', { path: 'a', flag: null }, 'flag', 'a boolean', 'null'],
		[
			'not in the enum',
			{ path: 'a', kind: 'c' },
			'kind',
			'one of a, b',
			'a string of 1 characters',
		],
		[
			'not matching the pattern',
			{ path: 'a', id: 'y' },
			'id',
			'a string matching ^x-[0-9]+$',
			'a string of 1 characters',
		],
		[
			'an array item of the wrong type',
			{ path: 'a', argv: [1] },
			'argv[0]',
			'a string',
			'an integer',
		],
		[
			'too many items',
			{ path: 'a', argv: ['a', 'b', 'c'] },
			'argv',
			'an array of at most 2 items of a string',
			'an array of 3',
		],
		[
			'a map value of the wrong type',
			{ path: 'a', env: { A: 1 } },
			'env.A',
			'a string',
			'an integer',
		],
		[
			'a map too large',
			{ path: 'a', env: { A: '', B: '', C: '' } },
			'env',
			'an object of at most 2 properties',
			'3 properties',
		],
	])(
		'refuses %s, naming the parameter and never echoing the value',
		(_label, args, parameter, expected, received) => {
			let caught: unknown
			try {
				validateToolArguments('t', SCHEMA, args)
			} catch (error) {
				caught = error
			}
			expect(caught).toBeInstanceOf(SandboxArgumentError)
			expect(caught).toMatchObject({ method: 't', parameter, expected, received })
		},
	)

	it('never echoes a secret-looking value in the message', () => {
		expect(() => validateToolArguments('t', SCHEMA, { path: 'hunter2-secret' })).toThrow(
			/path must be a string of at most 8 characters, got a string of 14 characters$/,
		)
	})
})

describe('output budget', () => {
	it.each([
		['ascii', 'abcdef', 3, 3],
		['inside a 2-byte character', 'aé', 2, 1],
		['after it', 'aé', 3, 3],
		['inside a 4-byte character', '😀', 3, 0],
		['past the end', 'ab', 9, 2],
	])('utf8PrefixLength: %s', (_label, text, limit, expected) => {
		expect(utf8PrefixLength(Buffer.from(text), limit)).toBe(expected)
	})

	it.each([
		['ascii', 'abcdef', 2, 4],
		['inside a character', 'éa', 2, 2],
		['all of it', 'ab', 9, 0],
	])('utf8SuffixStart: %s', (_label, text, limit, expected) => {
		expect(utf8SuffixStart(Buffer.from(text), limit)).toBe(expected)
	})

	it('keeps text within the budget as it is', () => {
		expect(boundText('hello', 5)).toEqual({
			text: 'hello',
			truncated: false,
			omittedBytes: 0,
			totalBytes: 5,
		})
	})

	it('cuts the middle, keeps head and tail, and says how much was left out', () => {
		const text = `${'a'.repeat(50)}${'m'.repeat(1000)}${'z'.repeat(50)}`
		const bounded = boundText(text, 100)
		expect(bounded).toMatchObject({ truncated: true, omittedBytes: 1000, totalBytes: 1100 })
		expect(bounded.text).toBe(`${'a'.repeat(50)}${truncationMarker(1000)}${'z'.repeat(50)}`)
	})

	it('never splits a character when cutting', () => {
		const bounded = boundText('é'.repeat(100), 11)
		expect(bounded.text).not.toContain('\uFFFD')
		expect(
			Buffer.byteLength(bounded.text) - Buffer.byteLength(truncationMarker(bounded.omittedBytes)),
		).toBeLessThanOrEqual(11)
		expect(
			bounded.omittedBytes +
				Buffer.byteLength(bounded.text) -
				Buffer.byteLength(truncationMarker(bounded.omittedBytes)),
		).toBe(200)
	})
})

describe('applyExactEdit', () => {
	it.each([
		['one occurrence', 'a b c', 'b', 'B', false, 'a B c', 1],
		['every occurrence with replace_all', 'x x x', 'x', 'y', true, 'y y y', 3],
		['a replacement with $ patterns kept literal', 'a', 'a', '$&$1', false, '$&$1', 1],
		['a multi-line match', 'l1\nl2\nl3\n', 'l2\nl3', 'L', false, 'l1\nL\n', 1],
		['a deletion', 'keep drop', ' drop', '', false, 'keep', 1],
	])('replaces %s', (_label, content, oldString, newString, all, expected, count) => {
		expect(applyExactEdit('f', content, oldString, newString, all)).toEqual({
			content: expected,
			replacements: count,
		})
	})

	it('names a missing match', () => {
		expect(() => applyExactEdit('f', 'abc', 'z', 'y', false)).toThrow(EditMatchNotFoundError)
	})

	it('names an ambiguous match with its count', () => {
		let caught: unknown
		try {
			applyExactEdit('f', 'aa aa', 'aa', 'b', false)
		} catch (error) {
			caught = error
		}
		expect(caught).toBeInstanceOf(EditMatchAmbiguousError)
		expect(caught).toMatchObject({ matches: 2, reason: 'edit-match-ambiguous', path: 'f' })
	})

	it.each([
		['aaaa', 'aa', 2],
		['abc', 'd', 0],
		['abab', 'ab', 2],
	])('counts %s / %s non-overlapping', (text, needle, count) => {
		expect(countOccurrences(text, needle)).toBe(count)
	})
})

describe('selectLines', () => {
	const text = 'one\ntwo\nthree\n'
	it.each([
		['the whole file', 1, undefined, 'one\ntwo\nthree\n', 1, 3],
		['one line', 2, 2, 'two\n', 2, 2],
		['a range past the end', 2, 99, 'two\nthree\n', 2, 3],
		['a start past the end', 9, undefined, '', 9, 8],
	])('selects %s', (_label, start, end, expected, first, last) => {
		expect(selectLines(text, start, end)).toEqual({
			text: expected,
			startLine: first,
			endLine: last,
			totalLines: 3,
		})
	})

	it('counts a last line without a newline', () => {
		expect(selectLines('a\nb', 2).text).toBe('b')
		expect(selectLines('a\nb', 1).totalLines).toBe(2)
	})
})

describe('sliceRead', () => {
	it.each([
		[
			'everything when it fits',
			{ cursor: 0, chunk: 'hello', nextOffset: 5, droppedBytes: 0 },
			10,
			{ output: 'hello', cursor: 5, remainingBytes: 0, droppedBytes: 0, skippedBytes: 0 },
		],
		[
			'a prefix and the cursor after it',
			{ cursor: 10, chunk: 'abcdef', nextOffset: 16, droppedBytes: 0 },
			4,
			{ output: 'abcd', cursor: 14, remainingBytes: 2, droppedBytes: 0, skippedBytes: 0 },
		],
		[
			'from where the guest still holds bytes',
			{ cursor: 0, chunk: 'xyz', nextOffset: 10, droppedBytes: 7 },
			2,
			{ output: 'xy', cursor: 9, remainingBytes: 1, droppedBytes: 7, skippedBytes: 0 },
		],
		[
			'never half a character',
			{ cursor: 0, chunk: 'aé', nextOffset: 3, droppedBytes: 0 },
			2,
			{ output: 'a', cursor: 1, remainingBytes: 2, droppedBytes: 0, skippedBytes: 0 },
		],
		[
			'nothing new',
			{ cursor: 5, chunk: '', nextOffset: 5, droppedBytes: 0 },
			2,
			{ output: '', cursor: 5, remainingBytes: 0, droppedBytes: 0, skippedBytes: 0 },
		],
		[
			'output that was not UTF-8, whole',
			{ cursor: 0, chunk: '\uFFFD', nextOffset: 1, droppedBytes: 0 },
			8,
			{ output: '\uFFFD', cursor: 1, remainingBytes: 0, droppedBytes: 0, skippedBytes: 0 },
		],
		[
			'output that was not UTF-8, cut: the rest passed over and counted',
			{ cursor: 0, chunk: 'ab\uFFFDcd', nextOffset: 5, droppedBytes: 0 },
			2,
			{ output: 'ab', cursor: 5, remainingBytes: 0, droppedBytes: 0, skippedBytes: 3 },
		],
	])('hands out %s', (_label, read, maxBytes, expected) => {
		expect(sliceRead(read, maxBytes)).toEqual(expected)
	})

	it('reading on from each cursor yields every byte exactly once', () => {
		const stream = 'héllo wörld, 😀 and more'
		const bytes = Buffer.from(stream)
		let cursor = 0
		let out = ''
		while (cursor < bytes.length) {
			const chunk = bytes.subarray(cursor).toString('utf8')
			const slice = sliceRead({ cursor, chunk, nextOffset: bytes.length, droppedBytes: 0 }, 4)
			expect(slice.cursor).toBeGreaterThan(cursor)
			out += slice.output
			cursor = slice.cursor
		}
		expect(out).toBe(stream)
	})
})

describe('grep matching', () => {
	it.each([
		[
			'a literal with regex characters',
			{ pattern: 'a.b', regex: false, ignoreCase: false },
			'axb\na.b',
			[2],
		],
		[
			'a regular expression',
			{ pattern: 'a.b', regex: true, ignoreCase: false },
			'axb\na.b',
			[1, 2],
		],
		['case-insensitively', { pattern: 'HELLO', regex: false, ignoreCase: true }, 'x\nhello', [2]],
	])('matches %s', async (_label, query, text, lines) => {
		const matches = await matchLines(compileGrepQuery(query), text, 10, 1000)
		expect(matches.map((m) => m.line)).toEqual(lines)
	})

	it('stops at the limit and cuts long lines', async () => {
		const matches = await matchLines(
			compileGrepQuery({ pattern: 'a', regex: false, ignoreCase: false }),
			`${'a'.repeat(1000)}\na\na`,
			2,
			1000,
		)
		expect(matches).toHaveLength(2)
		expect(matches[0]?.text).toHaveLength(MAX_MATCH_LINE_CHARS)
	})

	it('refuses a pattern that does not compile, by parameter', () => {
		expect(() => compileGrepQuery({ pattern: '(', regex: true, ignoreCase: false })).toThrow(
			SandboxArgumentError,
		)
	})

	it('stops a catastrophically backtracking pattern within its budget and names it', async () => {
		const pattern = compileGrepQuery({ pattern: '(a+)+b', regex: true, ignoreCase: false })
		await expect(matchLines(pattern, 'a'.repeat(40), 10, 50)).rejects.toThrow(
			GrepPatternTimeoutError,
		)
	})
})
