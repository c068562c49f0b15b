import { describe, expect, it } from 'vitest'
import { expandBraces } from '../../../src/exec-programs/walk/brace-expansion.js'
import { FileWalkBraceLimitError } from '../../../src/exec-programs/walk/walk-errors.js'

describe('expandBraces', () => {
	const cases: ReadonlyArray<readonly [string, readonly string[]]> = [
		['plain/*.ts', ['plain/*.ts']],
		['{a,b}', ['a', 'b']],
		['src/{a,b}.ts', ['src/a.ts', 'src/b.ts']],
		['{a,b}{1,2}', ['a1', 'a2', 'b1', 'b2']],
		['{a,{b,c}d}', ['a', 'bd', 'cd']],
		['x{,y}', ['x', 'xy']],
		['{a,a}', ['a']],
		['{1..3}', ['1', '2', '3']],
		['{3..1}', ['3', '2', '1']],
		['{01..03}', ['01', '02', '03']],
		['{1..7..3}', ['1', '4', '7']],
		['{-1..1}', ['-1', '0', '1']],
		['{a..c}', ['a', 'b', 'c']],
		['{a}', ['{a}']],
		['{}', ['{}']],
		['{a,b', ['{a,b']],
		['a}b', ['a}b']],
		['\\{a,b}', ['\\{a,b}']],
		['{a\\,b,c}', ['a\\,b', 'c']],
		['{x}{a,b}', ['{x}a', '{x}b']],
		['**/*.{ts,tsx}', ['**/*.ts', '**/*.tsx']],
	]
	it.each(cases)('expands %j into the listed alternatives', (pattern, expected) => {
		expect(expandBraces(pattern)).toEqual(expected)
	})

	it('allows exactly the bound and refuses one alternative more', () => {
		expect(expandBraces('{1..256}')).toHaveLength(256)
		expect(() => expandBraces('{1..257}')).toThrow(FileWalkBraceLimitError)
		expect(expandBraces('{a..p}{a..p}')).toHaveLength(256)
		expect(() => expandBraces('{a..p}{a..q}')).toThrow(FileWalkBraceLimitError)
	})

	it('refuses a huge sequence or product without building it', () => {
		expect(() => expandBraces('{1..100000000000}')).toThrow(FileWalkBraceLimitError)
		const product = '{a,b}'.repeat(40)
		expect(() => expandBraces(product)).toThrow(FileWalkBraceLimitError)
	})

	it('names the bound on the refusal', () => {
		try {
			expandBraces('{1..300}', 256)
			expect.unreachable()
		} catch (error) {
			expect(error).toBeInstanceOf(FileWalkBraceLimitError)
			expect((error as FileWalkBraceLimitError).limit).toBe(256)
			expect((error as FileWalkBraceLimitError).name).toBe('FileWalkBraceLimitError')
		}
	})
})
