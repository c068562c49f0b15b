import { describe, expect, it } from 'vitest'
import type { SandboxWalkFilesOptions } from '../../../src/contract/sandbox.js'
import {
	FileWalkBraceLimitError,
	FileWalkOptionError,
	FileWalkPatternError,
	FileWalkRootError,
} from '../../../src/exec-programs/walk/walk-errors.js'
import {
	DEFAULT_MAX_VISITED_ENTRIES,
	planFileWalk,
} from '../../../src/exec-programs/walk/walk-plan.js'

describe('planFileWalk', () => {
	it('applies the defaults: **/* pattern, 20 000 visited entries, hidden skipped, no depth bound', () => {
		const plan = planFileWalk('/workspace', { maxEntries: 10 })
		expect(plan).toEqual({
			root: '/workspace',
			patterns: [[{ t: 'g' }, { t: 'r', s: '^(?!\\.)[^/]*$' }]],
			prefixLength: 0,
			maxDepth: null,
			maxEntries: 10,
			maxVisitedEntries: DEFAULT_MAX_VISITED_ENTRIES,
			dot: false,
		})
		expect(DEFAULT_MAX_VISITED_ENTRIES).toBe(20_000)
	})

	it.each([
		['/workspace/', '/workspace'],
		['/workspace//a/./b/', '/workspace/a/b'],
		['/workspace/a/../b', '/workspace/b'],
		['/', '/'],
	])('normalises the root %j to %j', (root, expected) => {
		expect(planFileWalk(root, { maxEntries: 1 }).root).toBe(expected)
	})

	it.each([
		['*.ts', 1],
		['src/*.ts', 2],
		['src/{a,b}/x/*.ts', 4],
		['src/**/*.ts', null],
		['{a/b/c,d}', 3],
	])('bounds the depth of %j by the pattern itself (%j)', (pattern, depth) => {
		expect(planFileWalk('/w', { pattern, maxEntries: 1 }).maxDepth).toBe(depth)
	})

	it('takes the smaller of the pattern depth and maxDepth', () => {
		expect(planFileWalk('/w', { pattern: '**/*', maxEntries: 1, maxDepth: 2 }).maxDepth).toBe(2)
		expect(planFileWalk('/w', { pattern: '*', maxEntries: 1, maxDepth: 5 }).maxDepth).toBe(1)
	})

	it.each([
		['src/lib/*.ts', 2],
		['src/lib/index.ts', 2],
		['src/{a,b}/*.ts', 1],
		['{src,lib}/*.ts', 0],
		['src/**/x.ts', 1],
		['a.txt', 0],
		['./src/./x/*.ts', 2],
	])('walks the literal prefix of %j directly (%i segments)', (pattern, prefixLength) => {
		expect(planFileWalk('/w', { pattern, maxEntries: 1 }).prefixLength).toBe(prefixLength)
	})

	const refusals: ReadonlyArray<
		readonly [
			string,
			string,
			Partial<SandboxWalkFilesOptions>,
			new (...args: never[]) => Error,
			string,
		]
	> = [
		['a relative root', 'workspace', {}, FileWalkRootError, 'root-not-absolute'],
		['an empty root', '', {}, FileWalkRootError, 'root-not-absolute'],
		['an absolute pattern', '/w', { pattern: '/etc/*' }, FileWalkPatternError, 'pattern-absolute'],
		['a drive-letter pattern', '/w', { pattern: 'C:/x' }, FileWalkPatternError, 'pattern-absolute'],
		[
			'a braced absolute pattern',
			'/w',
			{ pattern: '{a,/etc}/x' },
			FileWalkPatternError,
			'pattern-absolute',
		],
		[
			'a parent segment',
			'/w',
			{ pattern: 'a/../b' },
			FileWalkPatternError,
			'pattern-parent-segment',
		],
		[
			'a braced parent segment',
			'/w',
			{ pattern: '{..,a}/x' },
			FileWalkPatternError,
			'pattern-parent-segment',
		],
		['an empty pattern', '/w', { pattern: '' }, FileWalkPatternError, 'pattern-empty'],
		['a pattern of only ./', '/w', { pattern: './' }, FileWalkPatternError, 'pattern-empty'],
		[
			'a pattern over 4096 characters',
			'/w',
			{ pattern: 'a'.repeat(4097) },
			FileWalkPatternError,
			'pattern-too-long',
		],
		[
			'more than 256 brace alternatives',
			'/w',
			{ pattern: '{1..257}' },
			FileWalkBraceLimitError,
			'brace-limit',
		],
		[
			'a plan too large for one argument',
			'/w',
			{ pattern: `{${'x'.repeat(2000)},y}{1..100}` },
			FileWalkPatternError,
			'plan-too-large',
		],
		['maxEntries 0', '/w', { maxEntries: 0 }, FileWalkOptionError, 'invalid-option'],
		['a fractional maxEntries', '/w', { maxEntries: 1.5 }, FileWalkOptionError, 'invalid-option'],
		['maxDepth 0', '/w', { maxDepth: 0 }, FileWalkOptionError, 'invalid-option'],
		[
			'a negative maxVisitedEntries',
			'/w',
			{ maxVisitedEntries: -1 },
			FileWalkOptionError,
			'invalid-option',
		],
	]
	it.each(refusals)('refuses %s with a named error', (_, root, extra, errorClass, reason) => {
		const options = { maxEntries: 5, ...extra } as SandboxWalkFilesOptions
		let caught: unknown
		try {
			planFileWalk(root, options)
		} catch (error) {
			caught = error
		}
		expect(caught).toBeInstanceOf(errorClass)
		expect((caught as { reason: string }).reason).toBe(reason)
		expect((caught as Error).name).toBe(errorClass.name)
	})

	it('accepts exactly 4096 characters and exactly 256 alternatives', () => {
		expect(() => planFileWalk('/w', { pattern: 'a'.repeat(4096), maxEntries: 1 })).not.toThrow()
		expect(planFileWalk('/w', { pattern: '{1..256}', maxEntries: 1 }).patterns).toHaveLength(256)
	})

	it('refuses a missing maxEntries', () => {
		expect(() => planFileWalk('/w', {} as SandboxWalkFilesOptions)).toThrow(FileWalkOptionError)
	})
})
