import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

/**
 * The published entry points, each pinned to an exact list of names: the runtime names come from
 * the built `dist/` through the package's own `exports` map (exactly what a user imports), the
 * type-only names from the entry's source. Adding or removing a public name is therefore a
 * deliberate diff of the entry's `<name>-exports.txt` beside this file
 * (`npx vitest run test/package/entry-points.test.ts -u` rewrites them after such a change).
 */
const repo = join(import.meta.dirname, '..', '..')
const manifest: { exports: Record<string, { types: string; import: string }> } = JSON.parse(
	readFileSync(join(repo, 'package.json'), 'utf8'),
)

const ENTRIES = [
	{ subpath: '.', specifier: '@namzu/sandbox', source: 'src/index.ts', list: 'root-exports.txt' },
	{
		subpath: './agent',
		specifier: '@namzu/sandbox/agent',
		source: 'src/agent-entry.ts',
		list: 'agent-exports.txt',
	},
	...(['contract', 'local', 'container', 'microvm', 'kubernetes'] as const).map((name) => ({
		subpath: `./${name}`,
		specifier: `@namzu/sandbox/${name}`,
		source: `src/${name}-entry.ts`,
		list: `${name}-exports.txt`,
	})),
	{
		subpath: './testing',
		specifier: '@namzu/sandbox/testing',
		source: 'src/testing/index.ts',
		list: 'testing-exports.txt',
	},
	{
		subpath: './tools',
		specifier: '@namzu/sandbox/tools',
		source: 'src/tools/index.ts',
		list: 'tools-exports.txt',
	},
] as const

interface NamedExport {
	readonly name: string
	readonly typeOnly: boolean
}

/** Every name an entry file exports, read with the TypeScript parser (no program, no checker). */
function namedExports(sourceText: string): { names: NamedExport[]; star: number } {
	const file = ts.createSourceFile('entry.ts', sourceText, ts.ScriptTarget.ES2022, false)
	const names: NamedExport[] = []
	let star = 0
	for (const statement of file.statements) {
		if (ts.isExportDeclaration(statement)) {
			const clause = statement.exportClause
			if (!clause) {
				star++
				continue
			}
			if (ts.isNamespaceExport(clause)) {
				names.push({ name: clause.name.text, typeOnly: statement.isTypeOnly })
				continue
			}
			for (const element of clause.elements) {
				names.push({
					name: element.name.text,
					typeOnly: statement.isTypeOnly || element.isTypeOnly,
				})
			}
		}
	}
	return { names, star }
}

function pinnedList(names: readonly NamedExport[]): string {
	const lines = [...names]
		.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
		.map((entry) => (entry.typeOnly ? `type ${entry.name}` : entry.name))
	return `${lines.join('\n')}\n`
}

function sourceFiles(dir: string): string[] {
	return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
		const path = join(dir, entry.name)
		if (entry.isDirectory()) return sourceFiles(path)
		return entry.name.endsWith('.ts') ? [path] : []
	})
}

describe('package entry points', () => {
	it('package.json exports exactly the root and the subpaths listed here, each built into dist/', () => {
		expect(Object.keys(manifest.exports).sort()).toEqual(ENTRIES.map((e) => e.subpath).sort())
		for (const entry of ENTRIES) {
			const built = entry.source.replace(/^src\//, './dist/').replace(/\.ts$/, '')
			expect(manifest.exports[entry.subpath]).toEqual({
				types: `${built}.d.ts`,
				import: `${built}.js`,
			})
		}
	})

	it.each(ENTRIES)('$specifier exports exactly the names in $list', async (entry) => {
		const { names, star } = namedExports(readFileSync(join(repo, entry.source), 'utf8'))
		expect(star).toBe(0)
		const built: Record<string, unknown> = await import(entry.specifier)
		const runtime = names.filter((n) => !n.typeOnly).map((n) => n.name)
		expect(Object.keys(built).sort()).toEqual([...runtime].sort())
		await expect(pinnedList(names)).toMatchFileSnapshot(join(import.meta.dirname, entry.list))
	})

	it('no file in src/ re-exports with export *: every public name is listed on purpose', () => {
		const offenders = sourceFiles(join(repo, 'src')).filter(
			(file) => namedExports(readFileSync(file, 'utf8')).star > 0,
		)
		expect(offenders.map((file) => relative(repo, file))).toEqual([])
	})

	it('the star check sees export * and export type *, and only those', () => {
		expect(namedExports("export * from './a.js'\nexport type * from './b.js'").star).toBe(2)
		expect(namedExports("export * as ns from './a.js'")).toEqual({
			names: [{ name: 'ns', typeOnly: false }],
			star: 0,
		})
		expect(
			namedExports("export { a, type B } from './a.js'\nexport type { C } from './c.js'").names,
		).toEqual([
			{ name: 'a', typeOnly: false },
			{ name: 'B', typeOnly: true },
			{ name: 'C', typeOnly: true },
		])
	})

	it('the ./testing subpath exports the conformance suite at contract version 5', async () => {
		const testing: Record<string, unknown> = await import('@namzu/sandbox/testing')
		expect(typeof testing.defineSandboxConformance).toBe('function')
		expect(testing.SANDBOX_CONTRACT_VERSION).toBe(5)
	})

	it('createSandboxProvider refuses a tier this build does not implement, by name', async () => {
		const { createSandboxProvider, SandboxBackendNotImplementedError } = await import(
			'@namzu/sandbox'
		)
		const config = { backend: { tier: 'microvm' } } as unknown as Parameters<
			typeof createSandboxProvider
		>[0]
		expect(() => createSandboxProvider(config)).toThrow(SandboxBackendNotImplementedError)
	})
})
