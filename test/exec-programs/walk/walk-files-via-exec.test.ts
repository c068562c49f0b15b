import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FileWalkLimitError } from '../../../src/contract/errors.js'
import type { SandboxExecResult, SandboxFileEntry } from '../../../src/contract/sandbox.js'
import { createGlobMatcher, globMatchesPath } from '../../../src/exec-programs/walk/glob-matcher.js'
import { compileGlob } from '../../../src/exec-programs/walk/glob-pattern.js'
import {
	FileWalkExecError,
	FileWalkProtocolError,
	FileWalkRootError,
} from '../../../src/exec-programs/walk/walk-errors.js'
import {
	type SandboxFileWalkExec,
	walkFilesViaExec,
} from '../../../src/exec-programs/walk/walk-files-via-exec.js'
import { createHostExec, processAlive } from './host-exec.js'

let dir: string
let tree: string

/** Relative path → content; directories are implied. */
const FILES: Readonly<Record<string, string>> = {
	'a.txt': 'a',
	'b.ts': 'bb',
	'src/index.ts': 'index',
	'src/util/strings.ts': 'strings!',
	'src/util/deep/deeper/leaf.md': 'leaf',
	'docs/readme.md': 'readme',
	'docs/guide/intro.md': 'intro',
	'.env': 'SECRET=1',
	'.github/workflows/ci.yml': 'on: push',
	'src/.cache/x.ts': 'cached',
	'weird name [1].txt': 'w',
	'ünïcode/ß.txt': 'u',
	'outside/escape.txt': 'nope',
}

async function collect(iterable: AsyncIterable<SandboxFileEntry>): Promise<SandboxFileEntry[]> {
	const out: SandboxFileEntry[] = []
	for await (const entry of iterable) out.push(entry)
	return out
}

function relative(entries: readonly SandboxFileEntry[], root = tree): string[] {
	return entries.map((entry) => entry.path.slice(root.length + 1)).sort()
}

beforeAll(async () => {
	dir = await mkdtemp(join(tmpdir(), 'namzu-walk-test-'))
	tree = join(dir, 'tree')
	for (const [path, content] of Object.entries(FILES)) {
		await mkdir(dirname(join(tree, path)), { recursive: true })
		await writeFile(join(tree, path), content)
	}
	// Links that must never be followed nor reported.
	await symlink(join(tree, 'outside'), join(tree, 'src', 'linked-dir'))
	await symlink(join(tree, 'a.txt'), join(tree, 'src', 'linked-file.ts'))
	await symlink(join(tree, 'src'), join(dir, 'tree-link'))
	await writeFile(join(dir, 'slow.cjs'), SLOW_PRELOAD)
})

afterAll(async () => {
	await rm(dir, { recursive: true, force: true })
})

/** Slows every lstat inside the guest program so a walk is still running when the test acts. */
const SLOW_PRELOAD = `const fs = require('fs')
const lstat = fs.lstatSync
fs.lstatSync = function (...args) { const end = Date.now() + 4; while (Date.now() < end) {} return lstat.apply(this, args) }
`

describe('walkFilesViaExec against a real walk process', () => {
	it('yields every visible regular file with its absolute path and size', async () => {
		const { exec } = createHostExec()
		const entries = await collect(walkFilesViaExec(exec, tree, { maxEntries: 100 }))
		expect(relative(entries)).toEqual([
			'a.txt',
			'b.ts',
			'docs/guide/intro.md',
			'docs/readme.md',
			'outside/escape.txt',
			'src/index.ts',
			'src/util/deep/deeper/leaf.md',
			'src/util/strings.ts',
			'weird name [1].txt',
			'ünïcode/ß.txt',
		])
		for (const entry of entries) {
			expect(entry.size).toBe(Buffer.byteLength(FILES[entry.path.slice(tree.length + 1)] ?? ''))
		}
	})

	it('stops after maxEntries files and the walk still ends cleanly', async () => {
		const { exec, runs } = createHostExec()
		const entries = await collect(walkFilesViaExec(exec, tree, { maxEntries: 3 }))
		expect(entries).toHaveLength(3)
		const result = await runs[0]?.result
		expect(result?.exitCode).toBe(0)
		expect(result?.aborted).toBeUndefined()
	})

	it('does not look below maxDepth', async () => {
		const { exec } = createHostExec()
		const entries = await collect(walkFilesViaExec(exec, tree, { maxEntries: 100, maxDepth: 2 }))
		expect(relative(entries)).toEqual([
			'a.txt',
			'b.ts',
			'docs/readme.md',
			'outside/escape.txt',
			'src/index.ts',
			'weird name [1].txt',
			'ünïcode/ß.txt',
		])
	})

	it('includes hidden files only with includeHidden, or when the pattern names them', async () => {
		const { exec } = createHostExec()
		const hidden = await collect(
			walkFilesViaExec(exec, tree, {
				maxEntries: 100,
				includeHidden: true,
				pattern: '**/*.{yml,ts}',
			}),
		)
		expect(relative(hidden)).toEqual([
			'.github/workflows/ci.yml',
			'b.ts',
			'src/.cache/x.ts',
			'src/index.ts',
			'src/util/strings.ts',
		])
		const named = await collect(
			walkFilesViaExec(exec, tree, { maxEntries: 100, pattern: '{.env,.github/**/*.yml}' }),
		)
		expect(relative(named)).toEqual(['.env', '.github/workflows/ci.yml'])
	})

	const patterns = [
		'**/*',
		'*',
		'*.ts',
		'**/*.ts',
		'**/*.md',
		'src/**/*.ts',
		'src/util/*',
		'src/util/deep/deeper/leaf.md',
		'docs/{guide/*,readme}.md',
		'**/[a-c]*',
		'**/*[[]1]*',
		'ünïcode/*',
		'**/.cache/*',
		'nothing/**',
	]
	it.each(patterns)('agrees with the host-side matcher for %j', async (pattern) => {
		const { exec } = createHostExec()
		for (const includeHidden of [false, true]) {
			const walked = await collect(
				walkFilesViaExec(exec, tree, { maxEntries: 100, pattern, includeHidden }),
			)
			const matcher = createGlobMatcher(compileGlob(pattern, includeHidden))
			const expected = Object.keys(FILES)
				.filter((path) => globMatchesPath(matcher, path))
				.sort()
			expect(relative(walked)).toEqual(expected)
		}
	})

	it('yields nothing for a missing root or a root below a regular file', async () => {
		const { exec } = createHostExec()
		expect(await collect(walkFilesViaExec(exec, join(tree, 'missing'), { maxEntries: 5 }))).toEqual(
			[],
		)
		expect(
			await collect(walkFilesViaExec(exec, join(tree, 'a.txt', 'x'), { maxEntries: 5 })),
		).toEqual([])
	})

	it('yields a regular-file root itself when its basename matches', async () => {
		const { exec } = createHostExec()
		const root = join(tree, 'src', 'index.ts')
		expect(await collect(walkFilesViaExec(exec, root, { maxEntries: 5 }))).toEqual([
			{ path: root, size: 5 },
		])
		expect(
			await collect(walkFilesViaExec(exec, root, { maxEntries: 5, pattern: '*.ts' })),
		).toHaveLength(1)
		expect(await collect(walkFilesViaExec(exec, root, { maxEntries: 5, pattern: '*.md' }))).toEqual(
			[],
		)
	})

	it('never follows or reports a symbolic link', async () => {
		const { exec } = createHostExec()
		const entries = await collect(
			walkFilesViaExec(exec, join(tree, 'src'), { maxEntries: 100, pattern: '**/*' }),
		)
		expect(relative(entries, join(tree, 'src'))).toEqual([
			'index.ts',
			'util/deep/deeper/leaf.md',
			'util/strings.ts',
		])
		const through = await collect(
			walkFilesViaExec(exec, tree, { maxEntries: 100, pattern: 'src/linked-dir/*' }),
		)
		expect(through).toEqual([])
	})

	it('refuses a root that is or passes through a symbolic link', async () => {
		const { exec } = createHostExec()
		for (const root of [join(dir, 'tree-link'), join(dir, 'tree-link', 'util')]) {
			const error = await collect(walkFilesViaExec(exec, root, { maxEntries: 5 })).catch(
				(e: unknown) => e,
			)
			expect(error).toBeInstanceOf(FileWalkRootError)
			expect((error as FileWalkRootError).reason).toBe('root-is-symlink')
		}
	})

	it('throws ERR_FILE_WALK_LIMIT when the examined-entry budget runs out', async () => {
		const { exec } = createHostExec()
		const seen: SandboxFileEntry[] = []
		let caught: unknown
		try {
			for await (const entry of walkFilesViaExec(exec, tree, {
				maxEntries: 100,
				maxVisitedEntries: 6,
			})) {
				seen.push(entry)
			}
		} catch (error) {
			caught = error
		}
		expect(caught).toBeInstanceOf(FileWalkLimitError)
		expect((caught as FileWalkLimitError).code).toBe('ERR_FILE_WALK_LIMIT')
		expect((caught as FileWalkLimitError).limit).toBe(6)
		expect(seen.length).toBeLessThan(10)
	})

	it('finishes when the budget is exactly enough', async () => {
		const { exec } = createHostExec()
		// docs/ holds readme.md and guide/, guide/ holds intro.md: three examined entries.
		const entries = await collect(
			walkFilesViaExec(exec, join(tree, 'docs'), { maxEntries: 10, maxVisitedEntries: 3 }),
		)
		expect(entries).toHaveLength(2)
		await expect(
			collect(walkFilesViaExec(exec, join(tree, 'docs'), { maxEntries: 10, maxVisitedEntries: 2 })),
		).rejects.toThrow(FileWalkLimitError)
	})

	it('walks a literal prefix without reading the directories beside it', async () => {
		const { exec } = createHostExec()
		// Only src, util and util's two entries are examined: the budget of 4 is enough.
		const entries = await collect(
			walkFilesViaExec(exec, tree, {
				maxEntries: 10,
				pattern: 'src/util/*.ts',
				maxVisitedEntries: 4,
			}),
		)
		expect(relative(entries)).toEqual(['src/util/strings.ts'])
	})

	it('yields lazily, and leaving the loop early kills the walk process', async () => {
		const wide = join(dir, 'wide')
		await mkdir(wide)
		await Promise.all(
			Array.from({ length: 400 }, (_, i) => writeFile(join(wide, `f${i}.txt`), 'x')),
		)
		const { exec, runs } = createHostExec(['--require', join(dir, 'slow.cjs')])
		let settledWhenFirstSeen: boolean | undefined
		for await (const _ of walkFilesViaExec(exec, wide, { maxEntries: 1000 })) {
			const run = runs[0]
			settledWhenFirstSeen = await Promise.race([
				run?.result.then(() => true),
				new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 20)),
			])
			break
		}
		expect(settledWhenFirstSeen).toBe(false)
		const result = await runs[0]?.result
		expect(result?.aborted).toBe(true)
		expect(processAlive(runs[0]?.pid ?? 0)).toBe(false)
	})

	it('aborting the signal stops the walk process and rejects with the abort reason', async () => {
		const wide = join(dir, 'wide-abort')
		await mkdir(wide)
		await Promise.all(
			Array.from({ length: 400 }, (_, i) => writeFile(join(wide, `f${i}.txt`), 'x')),
		)
		const { exec, runs } = createHostExec(['--require', join(dir, 'slow.cjs')])
		const controller = new AbortController()
		let count = 0
		const error = await (async () => {
			for await (const _ of walkFilesViaExec(exec, wide, {
				maxEntries: 1000,
				signal: controller.signal,
			})) {
				count++
				if (count === 1) controller.abort(new Error('stop now'))
			}
		})().catch((e: unknown) => e)
		expect((error as Error).message).toBe('stop now')
		expect((await runs[0]?.result)?.aborted).toBe(true)
		expect(processAlive(runs[0]?.pid ?? 0)).toBe(false)
	})

	it('does not start anything when the signal is already aborted', async () => {
		const { exec, runs } = createHostExec()
		const controller = new AbortController()
		controller.abort()
		await expect(
			collect(walkFilesViaExec(exec, tree, { maxEntries: 1, signal: controller.signal })),
		).rejects.toThrow()
		expect(runs).toHaveLength(0)
	})
})

/** An exec that answers with scripted stdout: for checking how untrusted output is judged. */
function scriptedExec(
	stdout: string,
	result: Partial<SandboxExecResult> = {},
	options: { stream?: boolean } = {},
): SandboxFileWalkExec {
	return async (_command, _args, execOptions) => {
		if (options.stream !== false) execOptions?.onOutput?.({ stream: 'stdout', data: stdout })
		return { exitCode: 0, stdout, stderr: '', timedOut: false, durationMs: 1, ...result }
	}
}

describe('walkFilesViaExec judging the guest output', () => {
	const entry = `${JSON.stringify({ type: 'entry', path: '/w/a', size: 1 })}\n`
	const done = `${JSON.stringify({ type: 'done' })}\n`

	it('reads the full stdout from the result when the exec did not stream', async () => {
		const entries = await collect(
			walkFilesViaExec(scriptedExec(entry + done, {}, { stream: false }), '/w', { maxEntries: 5 }),
		)
		expect(entries).toEqual([{ path: '/w/a', size: 1 }])
	})

	const failures: ReadonlyArray<
		readonly [string, string, Partial<SandboxExecResult>, new (...args: never[]) => Error, string]
	> = [
		['a missing done record', entry, {}, FileWalkProtocolError, 'missing-done'],
		['a cut-off last line', `${entry}{"type":"do`, {}, FileWalkProtocolError, 'output-truncated'],
		[
			'clipped output',
			entry + done,
			{ stdoutTruncated: true },
			FileWalkProtocolError,
			'output-truncated',
		],
		['a non-zero exit', entry + done, { exitCode: 2 }, FileWalkExecError, 'exit-code'],
		['a timeout', entry, { timedOut: true, exitCode: -1 }, FileWalkExecError, 'timed-out'],
		[
			'a guest error record',
			`${JSON.stringify({ type: 'error', message: 'boom', code: 'EIO' })}\n`,
			{ exitCode: 1 },
			FileWalkExecError,
			'guest-error',
		],
		[
			'an entry outside the root',
			`${JSON.stringify({ type: 'entry', path: '/etc/passwd', size: 1 })}\n${done}`,
			{},
			FileWalkProtocolError,
			'path-outside-root',
		],
	]
	it.each(failures)('fails on %s', async (_, stdout, result, errorClass, reason) => {
		const error = await collect(
			walkFilesViaExec(scriptedExec(stdout, result), '/w', { maxEntries: 5 }),
		).catch((e: unknown) => e)
		expect(error).toBeInstanceOf(errorClass)
		const { violation, reason: own } = error as { violation?: string; reason: string }
		expect(violation ?? own).toBe(reason)
	})

	it('passes an exec rejection through unchanged', async () => {
		const refusal = Object.assign(new Error('destroyed'), { name: 'SandboxDestroyedError' })
		const exec: SandboxFileWalkExec = async () => {
			throw refusal
		}
		await expect(collect(walkFilesViaExec(exec, '/w', { maxEntries: 5 }))).rejects.toBe(refusal)
	})

	it('re-throws a cancellation the exec could not confirm when the loop is left early', async () => {
		const unconfirmed = Object.assign(new Error('cancel outcome unknown'), {
			name: 'RemoteCancellationUnknownError',
		})
		const exec: SandboxFileWalkExec = (_command, _args, options) =>
			new Promise((_resolve, reject) => {
				options?.onOutput?.({ stream: 'stdout', data: entry })
				options?.signal?.addEventListener('abort', () => reject(unconfirmed), { once: true })
			})
		const error = await (async () => {
			for await (const _ of walkFilesViaExec(exec, '/w', { maxEntries: 5 })) break
		})().catch((e: unknown) => e)
		expect(error).toBe(unconfirmed)
	})
})
