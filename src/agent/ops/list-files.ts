import { lstat, readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { errnoCode, fsRefusal } from '../files/fs-refusal.js'
import { resolveReadablePath } from '../files/jail.js'
import type { OpHandler } from '../server/op-context.js'

export interface ListedFile {
	readonly path: string
	readonly size: number
}

/**
 * `list-files`: every regular file under the path, recursively, with absolute paths. Symlinks are
 * never followed (nor listed), so a link cannot lead the walk out of the jail; a missing root is an
 * empty listing. A write in progress may briefly show its `.namzu-write-….part` sibling.
 */
export const listFiles: OpHandler = async (body, ctx) => {
	const root = resolveReadablePath(ctx.config, body.path)
	ctx.reply({ ok: true, entries: await walkRegularFiles(root) })
}

export async function walkRegularFiles(root: string): Promise<ListedFile[]> {
	let rootStat: Awaited<ReturnType<typeof stat>>
	try {
		// The root itself was admitted by the jail (its real path is inside), so it may be followed.
		rootStat = await stat(root)
	} catch (error) {
		if (errnoCode(error) === 'ENOENT' || errnoCode(error) === 'ENOTDIR') return []
		throw fsRefusal(error)
	}
	if (rootStat.isFile()) return [{ path: root, size: rootStat.size }]
	if (!rootStat.isDirectory()) return []
	const entries: ListedFile[] = []
	const pending = [root]
	for (let directory = pending.pop(); directory !== undefined; directory = pending.pop()) {
		let names: string[]
		try {
			names = await readdir(directory)
		} catch (error) {
			// Vanished or unreadable below the root: skip that subtree rather than fail the listing.
			if (directory !== root && isSkippable(error)) continue
			throw fsRefusal(error)
		}
		for (const name of names) {
			const path = join(directory, name)
			try {
				const entry = await lstat(path)
				if (entry.isDirectory()) pending.push(path)
				else if (entry.isFile()) entries.push({ path, size: entry.size })
			} catch (error) {
				if (!isSkippable(error)) throw fsRefusal(error)
			}
		}
	}
	return entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
}

function isSkippable(error: unknown): boolean {
	const code = errnoCode(error)
	return code === 'ENOENT' || code === 'ENOTDIR' || code === 'EACCES'
}
