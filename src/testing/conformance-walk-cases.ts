/** The conformance suite's `walkFiles` section: limits, depth, hidden entries, globs, links. */
import type { Sandbox, SandboxFileEntry } from '../contract/sandbox.js'
import {
	type CaseBody,
	relativePaths,
	type SuiteContext,
	scratch,
	shownOf,
	writeTree,
} from './conformance-context.js'
import { captureError, drain, errorName } from './conformance-fixtures.js'

type WalkOf = (
	sandbox: Sandbox,
) => (
	root: string,
	options: Parameters<NonNullable<Sandbox['walkFiles']>>[1],
) => Promise<SandboxFileEntry[]>

const walkOf: WalkOf = (sandbox) => async (root, options) => {
	const walk = sandbox.walkFiles?.bind(sandbox)
	if (walk === undefined) throw new Error('walkFiles is not implemented')
	return drain(walk(root, options))
}

// long: a flat list of conformance cases, one `test()` each; splitting it would only scatter them
export function defineWalkCases({ test: register, expect }: SuiteContext): void {
	const test = (title: string, body: CaseBody) => register(title, body, { members: ['walkFiles'] })

	test('walkFiles yields no more than maxEntries files', async (sandbox) => {
		const root = scratch(sandbox, 'walk-max')
		const files = Object.fromEntries(
			Array.from({ length: 10 }, (_, i) => [`f${i}.txt`, 'x'.repeat(i)]),
		)
		await writeTree(sandbox, root, files)
		const entries = await walkOf(sandbox)(root, { maxEntries: 4 })
		expect(entries.length, 'entries yielded').toBe(4)
		expect(new Set(entries.map((entry) => entry.path)).size, 'distinct paths').toBe(4)
		const prefix = `${shownOf(sandbox, root)}/`
		for (const entry of entries) {
			const name = entry.path.slice(prefix.length)
			expect(entry.size, `size of ${name}`).toBe(files[name]?.length)
		}
	})

	test('walkFiles does not look below maxDepth', async (sandbox) => {
		const root = scratch(sandbox, 'walk-depth')
		await writeTree(sandbox, root, { 'one.txt': '1', 'a/two.txt': '2', 'a/b/three.txt': '3' })
		const entries = await walkOf(sandbox)(root, { maxEntries: 100, maxDepth: 2 })
		expect(relativePaths(sandbox, entries, root), 'paths within depth 2').toEqual([
			'a/two.txt',
			'one.txt',
		])
	})

	test('walkFiles skips hidden entries unless includeHidden is set or the pattern names them', async (sandbox) => {
		const root = scratch(sandbox, 'walk-hidden')
		await writeTree(sandbox, root, {
			'visible.txt': 'v',
			'.hidden.txt': 'h',
			'.dir/inner.txt': 'i',
			'sub/.also-hidden': 'a',
		})
		const walk = walkOf(sandbox)
		expect(relativePaths(sandbox, await walk(root, { maxEntries: 100 }), root), 'default').toEqual([
			'visible.txt',
		])
		expect(
			relativePaths(sandbox, await walk(root, { maxEntries: 100, includeHidden: true }), root),
			'includeHidden',
		).toEqual(['.dir/inner.txt', '.hidden.txt', 'sub/.also-hidden', 'visible.txt'])
		expect(
			relativePaths(
				sandbox,
				await walk(root, { maxEntries: 100, pattern: '{.hidden.txt,**/.also-hidden}' }),
				root,
			),
			'explicit dotfile pattern',
		).toEqual(['.hidden.txt', 'sub/.also-hidden'])
	})

	test('walkFiles yields only the files that match the glob pattern', async (sandbox) => {
		const root = scratch(sandbox, 'walk-glob')
		await writeTree(sandbox, root, {
			'src/a.ts': 'a',
			'src/b.ts': 'b',
			'src/c.js': 'c',
			'src/lib/d.ts': 'd',
			'docs/readme.md': 'r',
		})
		const walk = walkOf(sandbox)
		expect(
			relativePaths(sandbox, await walk(root, { maxEntries: 100, pattern: '**/*.ts' }), root),
			'**/*.ts',
		).toEqual(['src/a.ts', 'src/b.ts', 'src/lib/d.ts'])
		expect(
			relativePaths(sandbox, await walk(root, { maxEntries: 100, pattern: 'src/*.ts' }), root),
			'src/*.ts',
		).toEqual(['src/a.ts', 'src/b.ts'])
		expect(
			relativePaths(
				sandbox,
				await walk(root, { maxEntries: 100, pattern: '{docs/*.md,src/c.*}' }),
				root,
			),
			'{docs/*.md,src/c.*}',
		).toEqual(['docs/readme.md', 'src/c.js'])
	})

	test('walkFiles of a missing root yields nothing', async (sandbox) => {
		const entries = await walkOf(sandbox)(scratch(sandbox, 'walk-missing'), { maxEntries: 10 })
		expect(entries, 'entries').toEqual([])
	})

	test('walkFiles never follows or reports a symbolic link', async (sandbox) => {
		const base = scratch(sandbox, 'walk-links')
		await writeTree(sandbox, base, { 'target/inner.txt': 'inner', 'root/real.txt': 'real' })
		const linked = await sandbox.exec('/bin/sh', [
			'-c',
			'ln -s "$1/target" "$1/root/dir-link" && ln -s "$1/target/inner.txt" "$1/root/file-link.txt"',
			'sh',
			base,
		])
		expect(linked.exitCode, 'creating the links').toBe(0)
		const entries = await walkOf(sandbox)(`${base}/root`, { maxEntries: 100, pattern: '**/*' })
		expect(relativePaths(sandbox, entries, `${base}/root`), 'walked paths').toEqual(['real.txt'])
	})

	test('walkFiles throws ERR_FILE_WALK_LIMIT when its examined-entry budget runs out', async (sandbox) => {
		const root = scratch(sandbox, 'walk-budget')
		await writeTree(
			sandbox,
			root,
			Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`d${i % 3}/f${i}.txt`, 'x'])),
		)
		const error = await captureError(() =>
			walkOf(sandbox)(root, { maxEntries: 100, maxVisitedEntries: 10 }),
		)
		expect((error as { code?: unknown } | undefined)?.code, 'error code').toBe(
			'ERR_FILE_WALK_LIMIT',
		)
	})

	test('walkFiles leaves nothing running once the loop is left early', async (sandbox) => {
		const root = scratch(sandbox, 'walk-early')
		await writeTree(
			sandbox,
			root,
			Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`d${i % 5}/f${i}.txt`, 'x'])),
		)
		const walk = sandbox.walkFiles?.bind(sandbox)
		let seen = 0
		for await (const _ of walk?.(root, { maxEntries: 1000 }) ?? []) {
			seen++
			break
		}
		expect(seen, 'entries seen before leaving').toBe(1)
		expect(sandbox.status, 'status right after leaving the walk').toBe('ready')
	})

	test('walkFiles is refused once the sandbox is destroyed', async (sandbox) => {
		const root = scratch(sandbox, 'walk-destroyed')
		await sandbox.writeFile(`${root}/file.txt`, 'x')
		await sandbox.destroy()
		const error = await captureError(() => walkOf(sandbox)(root, { maxEntries: 10 }))
		expect(errorName(error), 'error name').toBe('SandboxDestroyedError')
	})
}
