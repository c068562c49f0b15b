/**
 * The conformance suite's `file verbs` section: `stat`, `exists`, `mkdir`, `remove`, `rename` and
 * `listDirectory` — each with what a caller relies on, and the jail attacked through each: a
 * symlink in the workspace pointing out of it is refused, never followed, while a symlink that
 * stays inside is described (positive control). Every path a result carries is the guest's own.
 */
import { SandboxPathEscapeError } from '../contract/errors.js'
import { type SuiteContext, scratch, shownOf } from './conformance-context.js'

/** The error `call` rejects with (the case fails when it resolves). */
async function rejection(call: () => Promise<unknown>): Promise<unknown> {
	try {
		await call()
	} catch (error) {
		return error
	}
	return undefined
}

function codeOf(error: unknown): unknown {
	return (error as { code?: unknown } | undefined)?.code
}

// long: a flat list of conformance cases, one `test()` each; splitting it would only scatter them
export function defineFileVerbCases({ test, expect }: SuiteContext): void {
	const verbs = ['stat', 'exists', 'mkdir', 'remove', 'rename', 'listDirectory'] as const

	test(
		'stat, exists, mkdir, rename and remove act on files and directories',
		async (sandbox) => {
			const root = scratch(sandbox, 'verbs')
			await sandbox.mkdir?.(`${root}/a/b`, { recursive: true })
			await sandbox.writeFile(`${root}/a/b/file.txt`, 'hello')
			const file = await sandbox.stat?.(`${root}/a/b/file.txt`)
			expect(file?.type, 'type of a file').toBe('file')
			expect(file?.size, 'size of a file').toBe(5)
			expect(file?.mtimeMs, 'mtime').toBeGreaterThan(0)
			expect((await sandbox.stat?.(`${root}/a`))?.type, 'type of a directory').toBe('directory')
			expect(await sandbox.exists?.(`${root}/a/b/file.txt`), 'exists').toBe(true)
			expect(await sandbox.exists?.(`${root}/nope`), 'exists of a missing path').toBe(false)
			const missing = await rejection(async () => sandbox.stat?.(`${root}/nope`))
			expect(codeOf(missing), 'stat of a missing path').toBe('ENOENT')
			await sandbox.rename?.(`${root}/a/b/file.txt`, `${root}/moved.txt`)
			expect(await sandbox.exists?.(`${root}/a/b/file.txt`), 'old name after rename').toBe(false)
			expect((await sandbox.readFile(`${root}/moved.txt`)).toString(), 'moved content').toBe(
				'hello',
			)
			const notEmpty = await rejection(async () => sandbox.remove?.(`${root}/a`))
			expect(codeOf(notEmpty), 'non-recursive remove of a non-empty directory').toBe('ENOTEMPTY')
			await sandbox.remove?.(`${root}/a`, { recursive: true })
			await sandbox.remove?.(`${root}/moved.txt`)
			expect(await sandbox.exists?.(`${root}/a`), 'removed tree').toBe(false)
			expect(await sandbox.exists?.(`${root}/moved.txt`), 'removed file').toBe(false)
		},
		{ members: [...verbs] },
	)

	test(
		'listDirectory lists one level with types and sizes, in pages, with guest paths',
		async (sandbox) => {
			const root = scratch(sandbox, 'listdir')
			for (const name of ['e', 'a', 'c', 'b', 'd']) {
				await sandbox.writeFile(`${root}/${name}.txt`, name.repeat(3))
			}
			await sandbox.writeFile(`${root}/sub/deeper.txt`, 'not listed')
			const whole = await sandbox.listDirectory?.(root)
			expect(
				whole?.entries.map((entry) => `${entry.name}:${entry.type}`),
				'names and types in name order',
			).toEqual([
				'a.txt:file',
				'b.txt:file',
				'c.txt:file',
				'd.txt:file',
				'e.txt:file',
				'sub:directory',
			])
			expect(whole?.entries[0]?.size, 'size').toBe(3)
			expect(whole?.entries[0]?.path, 'path, relative to rootDir').toBe(
				`${shownOf(sandbox, root)}/a.txt`,
			)
			expect(whole?.nextCursor, 'no cursor after the last page').toBe(undefined)
			const names: string[] = []
			let cursor: string | undefined
			for (let page = 0; page < 10; page += 1) {
				const result = await sandbox.listDirectory?.(root, {
					limit: 4,
					...(cursor ? { cursor } : {}),
				})
				names.push(...(result?.entries ?? []).map((entry) => entry.name))
				cursor = result?.nextCursor
				if (cursor === undefined) break
			}
			expect(names, 'every name once across pages of 4').toEqual(
				whole?.entries.map((entry) => entry.name),
			)
		},
		{ members: ['listDirectory'] },
	)

	test(
		'a symlink out of the workspace is refused by stat, remove, rename and listDirectory; one inside is described',
		async (sandbox) => {
			const root = scratch(sandbox, 'links')
			await sandbox.writeFile(`${root}/inside.txt`, 'inside')
			// `ln` in the guest: the links are the workload's own doing, as an attack would be.
			const made = await sandbox.exec('/bin/sh', [
				'-c',
				'ln -s /etc "$1/out" && ln -s /etc/passwd "$1/out-file" && ln -s inside.txt "$1/in"',
				'sh',
				root,
			])
			expect(made.exitCode, `ln (stderr: ${made.stderr})`).toBe(0)
			const attacks: Array<[string, () => Promise<unknown>]> = [
				['stat', async () => sandbox.stat?.(`${root}/out-file`)],
				['listDirectory', async () => sandbox.listDirectory?.(`${root}/out`)],
				['remove', async () => sandbox.remove?.(`${root}/out`, { recursive: true })],
				['rename', async () => sandbox.rename?.(`${root}/out-file`, `${root}/taken`)],
				['mkdir', async () => sandbox.mkdir?.(`${root}/out/namzu-conformance`)],
			]
			for (const [verb, attack] of attacks) {
				const error = await rejection(attack)
				expect(
					error instanceof SandboxPathEscapeError,
					`${verb} through a link out: ${String(error)}`,
				).toBe(true)
			}
			const passwd = await sandbox.exec('/bin/sh', ['-c', 'test -e /etc/passwd && echo present'])
			expect(passwd.stdout.trim(), 'the link target is untouched').toBe('present')
			const link = await sandbox.stat?.(`${root}/in`)
			expect(link?.type, 'a link inside is described, not followed').toBe('symlink')
			expect(link?.symlinkTarget, 'its target').toBe('inside.txt')
			const listed = await sandbox.listDirectory?.(root)
			expect(
				listed?.entries.map((entry) => `${entry.name}:${entry.type}`),
				'links are listed as links',
			).toEqual(['in:symlink', 'inside.txt:file', 'out:symlink', 'out-file:symlink'])
			await sandbox.remove?.(`${root}/in`)
			expect(await sandbox.exists?.(`${root}/inside.txt`), 'removing a link keeps its target').toBe(
				true,
			)
		},
		{ members: [...verbs] },
	)
}
