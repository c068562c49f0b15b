import { constants } from 'node:fs'
import { type FileHandle, lstat, open, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { errnoCode, fsRefusal } from '../files/fs-refusal.js'
import { type JailedPath, resolveJailedPath } from '../files/jail.js'
import { assertDescriptorWithin, openJailedFile } from '../files/jailed-open.js'
import { entryOf } from '../files/physical-walk.js'
import type { OpHandler } from '../handler/op-context.js'

export interface ListedFile {
	readonly path: string
	readonly size: number
}

/**
 * `list-files`: every regular file under the path, recursively, with absolute paths. Symlinks are
 * never followed (nor listed), so a link cannot lead the walk out of the jail; every directory is
 * read through a descriptor verified to be inside the jail, so neither can a directory swapped for
 * a link after it was seen. A missing root is an empty listing. A write in progress may briefly
 * show its `.namzu-write-….part` sibling.
 */
export const listFiles: OpHandler = async (body, ctx) => {
	const jailed = resolveJailedPath(ctx.config, body.path, 'read')
	ctx.reply({ ok: true, entries: await walkRegularFiles(jailed, String(body.path)) })
}

export async function walkRegularFiles(jailed: JailedPath, shown: string): Promise<ListedFile[]> {
	const root = jailed.path
	let rootHandle: FileHandle
	try {
		// The root itself was admitted by the jail (its real path is inside), so it may be followed.
		rootHandle = await openJailedFile(jailed, shown, constants.O_RDONLY | constants.O_NONBLOCK)
	} catch (error) {
		if (errnoCode(error) === 'ENOENT' || errnoCode(error) === 'ENOTDIR') return []
		throw fsRefusal(error)
	}
	const entries: ListedFile[] = []
	const pending: string[] = []
	try {
		const rootStat = await rootHandle.stat()
		if (rootStat.isFile()) return [{ path: root, size: rootStat.size }]
		if (!rootStat.isDirectory()) return []
		await listDirectory(rootHandle, root, entries, (directory) => pending.push(directory))
	} catch (error) {
		throw fsRefusal(error)
	} finally {
		await rootHandle.close().catch(() => undefined)
	}
	for (let directory = pending.pop(); directory !== undefined; directory = pending.pop()) {
		let handle: FileHandle
		try {
			handle = await open(
				directory,
				constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW,
			)
		} catch (error) {
			// Vanished, unreadable, or no longer a directory (ELOOP: now a symlink): skip that subtree.
			if (isSkippable(error)) continue
			throw fsRefusal(error)
		}
		try {
			assertDescriptorWithin(handle.fd, jailed.realRoot, shown)
			await listDirectory(handle, directory, entries, (below) => pending.push(below))
		} catch (error) {
			if (!isSkippable(error)) throw fsRefusal(error)
		} finally {
			await handle.close().catch(() => undefined)
		}
	}
	return entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
}

/** The regular files of one open directory into `entries`; its subdirectories to `descend`. */
async function listDirectory(
	handle: FileHandle,
	directory: string,
	entries: ListedFile[],
	descend: (path: string) => void,
): Promise<void> {
	const names = await readdir(entryOf(handle.fd, '.'))
	for (const name of names) {
		try {
			const entry = await lstat(entryOf(handle.fd, name))
			if (entry.isDirectory()) descend(join(directory, name))
			else if (entry.isFile()) entries.push({ path: join(directory, name), size: entry.size })
		} catch (error) {
			if (!isSkippable(error)) throw error
		}
	}
}

function isSkippable(error: unknown): boolean {
	const code = errnoCode(error)
	return code === 'ENOENT' || code === 'ENOTDIR' || code === 'EACCES' || code === 'ELOOP'
}
