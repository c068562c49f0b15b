import { describe, expect, it } from 'vitest'
import { createGlobMatcher, globMatchesPath } from '../../../src/exec-programs/walk/glob-matcher.js'
import { compileGlob } from '../../../src/exec-programs/walk/glob-pattern.js'
import { compileGlobSegment } from '../../../src/exec-programs/walk/glob-segment.js'

function matches(pattern: string, path: string, dot = false): boolean {
	return globMatchesPath(createGlobMatcher(compileGlob(pattern, dot)), path)
}

describe('compileGlobSegment', () => {
	it.each([
		['**', { t: 'g' }],
		['file.txt', { t: 'l', v: 'file.txt' }],
		['a\\*b', { t: 'l', v: 'a*b' }],
		['[abc', { t: 'l', v: '[abc' }],
		['.env', { t: 'l', v: '.env' }],
	] as const)('compiles %j without wildcards to %j', (piece, expected) => {
		expect(compileGlobSegment(piece, false)).toEqual(expected)
	})

	it('guards a leading wildcard against hidden names unless dot is set', () => {
		expect(compileGlobSegment('*.ts', false)).toEqual({ t: 'r', s: '^(?!\\.)[^/]*\\.ts$' })
		expect(compileGlobSegment('*.ts', true)).toEqual({ t: 'r', s: '^[^/]*\\.ts$' })
		expect(compileGlobSegment('.*', false)).toEqual({ t: 'r', s: '^\\.[^/]*$' })
	})
})

describe('glob matching, one name at a time', () => {
	const table: ReadonlyArray<readonly [string, string, boolean, boolean?]> = [
		// pattern, relative path, expected, includeHidden
		['**/*', 'a.txt', true],
		['**/*', 'a/b/c.txt', true],
		['*', 'a.txt', true],
		['*', 'a/b.txt', false],
		['*.ts', 'index.ts', true],
		['*.ts', 'index.tsx', false],
		['*.ts', 'src/index.ts', false],
		['**/*.ts', 'index.ts', true],
		['**/*.ts', 'src/deep/index.ts', true],
		['src/**/*.ts', 'src/index.ts', true],
		['src/**/*.ts', 'src/a/b/index.ts', true],
		['src/**/*.ts', 'lib/index.ts', false],
		['src/**', 'src/a/b', true],
		['a/**/b/*.md', 'a/b/x.md', true],
		['a/**/b/*.md', 'a/x/y/b/x.md', true],
		['a/**/b/*.md', 'a/x/y/c/x.md', false],
		['?.txt', 'a.txt', true],
		['?.txt', 'ab.txt', false],
		['[abc].txt', 'b.txt', true],
		['[abc].txt', 'd.txt', false],
		['[!abc].txt', 'd.txt', true],
		['[^abc].txt', 'a.txt', false],
		['[a-c]x', 'bx', true],
		['[a-c]x', 'dx', false],
		['[]]x', ']x', true],
		['[a-]x', '-x', true],
		['[[:digit:]]*', '7up', true],
		['[[:digit:]]*', 'up7', false],
		['[[:upper:]][[:lower:]]', 'Ab', true],
		['a\\*b', 'a*b', true],
		['a\\*b', 'axb', false],
		['a**b', 'axyzb', true],
		['file.txt', 'file.txt', true],
		['file.txt', 'FILE.TXT', false],
		['{a,b}/*.txt', 'b/x.txt', true],
		['{a,b}/*.txt', 'c/x.txt', false],
		['*.{js,ts}', 'x.ts', true],
		['./src/*.ts', 'src/x.ts', true],
		['src//*.ts', 'src/x.ts', true],
		['(a|b).txt', '(a|b).txt', true],
		['(a|b).txt', 'a.txt', false],
		['a+.txt', 'a+.txt', true],
		['a+.txt', 'aa.txt', false],
		// Hidden names: a wildcard never matches them without includeHidden...
		['*', '.env', false],
		['**/*', '.git/config', false],
		['**/*', 'a/.hidden/x', false],
		['**/*.ts', '.cache/x.ts', false],
		['?env', '.env', false],
		['[.]env', '.env', false],
		// ...an explicit dotted segment still does...
		['.env', '.env', true],
		['**/.env', 'a/.env', true],
		['.github/**/*.yml', '.github/workflows/ci.yml', true],
		['.*', '.profile', true],
		// ...and includeHidden lets wildcards through.
		['*', '.env', true, true],
		['**/*', '.git/config', true, true],
		['**/*.ts', '.cache/x.ts', true, true],
	]
	it.each(
		table.map(([pattern, path, expected, dot]) => [pattern, path, expected, dot ?? false] as const),
	)('%j against %j is %s (includeHidden %s)', (pattern, path, expected, dot) => {
		expect(matches(pattern, path, dot)).toBe(expected)
	})

	it('prunes a directory below which nothing can match', () => {
		const matcher = createGlobMatcher(compileGlob('src/*/index.ts', false))
		const src = matcher.advance(matcher.initial, 'src')
		expect(matcher.descends(src)).toBe(true)
		expect(matcher.advance(matcher.initial, 'lib').size).toBe(0)
		const leaf = matcher.advance(matcher.advance(src, 'pkg'), 'index.ts')
		expect(matcher.accepts(leaf)).toBe(true)
		expect(matcher.descends(leaf)).toBe(false)
	})

	it('keeps descending under a globstar but not into hidden directories', () => {
		const matcher = createGlobMatcher(compileGlob('**/*.md', false))
		expect(matcher.descends(matcher.advance(matcher.initial, 'docs'))).toBe(true)
		expect(matcher.advance(matcher.initial, '.git').size).toBe(0)
	})
})
