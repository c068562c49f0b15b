/**
 * `list-directory`: one level of a directory, in name order, a page at a time (`limit` at most
 * `MAX_LIST_DIRECTORY_PAGE`; `cursor` is the last name of the page before). Each entry is what
 * `lstat` says of it (a symlink is listed, never followed), read relative to the held directory
 * descriptor, verified inside the jail, so a directory swapped for a link after the check is not
 * read. An entry that vanishes between the read and its `lstat` is left out.
 */
import { constants } from 'node:fs'
import { readdir } from 'node:fs/promises'
import {
	DEFAULT_LIST_DIRECTORY_PAGE,
	MAX_LIST_DIRECTORY_PAGE,
	type WireDirectoryEntry,
} from '../../wire/file-verbs.js'
import { errnoCode, fsRefusal } from '../files/fs-refusal.js'
import { openJailedForRead } from '../files/jailed-open.js'
import { invalidFileRequest, statOf } from '../files/path-stat.js'
import { entryOf } from '../files/physical-walk.js'
import type { OpHandler } from '../handler/op-context.js'
import { isIntegerIn } from '../handler/value-checks.js'

function pageOf(body: Record<string, unknown>): { limit: number; cursor: string | undefined } {
	const limit = body.limit ?? DEFAULT_LIST_DIRECTORY_PAGE
	if (!isIntegerIn(limit, { min: 1, max: MAX_LIST_DIRECTORY_PAGE })) {
		throw invalidFileRequest(`limit must be an integer in [1, ${MAX_LIST_DIRECTORY_PAGE}]`)
	}
	const cursor = body.cursor
	if (
		cursor !== undefined &&
		(typeof cursor !== 'string' || cursor === '' || cursor.length > 255)
	) {
		throw invalidFileRequest('cursor must be the nextCursor of an earlier page')
	}
	return { limit, cursor }
}

export const listDirectory: OpHandler = async (body, ctx) => {
	const { limit, cursor } = pageOf(body)
	const handle = await openJailedForRead(ctx.config, body.path, constants.O_DIRECTORY)
	try {
		const names = (await readdir(entryOf(handle.fd, '.'))).sort()
		const entries: WireDirectoryEntry[] = []
		let at = cursor === undefined ? 0 : names.findIndex((name) => name > cursor)
		if (at < 0) at = names.length
		for (; at < names.length && entries.length < limit; at += 1) {
			const name = names[at] ?? ''
			try {
				entries.push({ name, ...(await statOf(entryOf(handle.fd, name))) })
			} catch (error) {
				if (errnoCode(error) !== 'ENOENT') throw error
			}
		}
		const more = at < names.length
		const last = entries.at(-1)?.name
		ctx.reply({ ok: true, entries, ...(more && last !== undefined ? { nextCursor: last } : {}) })
	} catch (error) {
		throw fsRefusal(error)
	} finally {
		await handle.close().catch(() => undefined)
	}
}
