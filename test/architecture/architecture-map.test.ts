import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'

/**
 * ARCHITECTURE.md is the map a reader starts from: every file under src/ is either named there
 * (its file name, in a table, prose or the tree at its top) or covered by a pattern the map writes in backticks with a `*`
 * (`cli/*-command.ts`), so any behaviour is two hops away — the map, then the file.
 */
const root = join(import.meta.dirname, '..', '..')
const src = join(root, 'src')
const map = readFileSync(join(root, 'ARCHITECTURE.md'), 'utf8')

function sourceFiles(dir: string): string[] {
	return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
		const path = join(dir, entry.name)
		if (entry.isDirectory()) return sourceFiles(path)
		return entry.name.endsWith('.ts') ? [relative(src, path)] : []
	})
}

/** Every backticked token of the map, split on the separators a table cell uses. */
function mapTokens(): string[] {
	return [...map.matchAll(/`([^`\n]+)`/g)].flatMap((match) =>
		(match[1] ?? '').split(/[\s,()]+/).filter((token) => token.length > 0),
	)
}

/** `cli/*-command.ts` → a suffix pattern over `src/`-relative paths. */
function patternMatcher(pattern: string): RegExp {
	const body = pattern
		.replace(/^src\//, '')
		.split('*')
		.map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
		.join('[^/]*')
	return new RegExp(`(^|/)${body}$`)
}

function isNamed(file: string, names: ReadonlySet<string>, patterns: RegExp[]): boolean {
	const base = file.split('/').at(-1) ?? file
	if (names.has(base) || names.has(file)) return true
	for (const name of names) if (name.endsWith(`/${base}`) && file.endsWith(name)) return true
	return patterns.some((pattern) => pattern.test(file))
}

describe('ARCHITECTURE.md names every source file', () => {
	const tokens = mapTokens()
	// A file name anywhere in the map counts: in a table, in prose, or in the tree at its top.
	const names = new Set(
		[...map.matchAll(/[\w./-]+\.ts\b/g)].map((match) => match[0].replace(/^(\.\/)?src\//, '')),
	)
	// Only file patterns: `export *` or a regular expression in prose cover nothing.
	const patterns = tokens
		.filter((token) => /^[\w./-]*\*[\w.*/-]*\.ts$/.test(token))
		.map(patternMatcher)

	it('matches a pattern by its suffix and only within one folder level per star', () => {
		const matcher = patternMatcher('cli/*-command.ts')
		expect(matcher.test('cli/run-command.ts')).toBe(true)
		expect(matcher.test('cli/nested/run-command.ts')).toBe(false)
		expect(matcher.test('cli/parse-args.ts')).toBe(false)
	})

	it('leaves no file under src/ unnamed', () => {
		const unnamed = sourceFiles(src).filter((file) => !isNamed(file, names, patterns))
		expect(
			unnamed,
			'name these files in ARCHITECTURE.md (or a backticked pattern such as `room/*-cases.ts`)',
		).toEqual([])
	})
})
