/**
 * `stat-path`, `remove-path`, `make-directory` and `rename-path` (wire/file-verbs.ts). Each path
 * goes through the one jail (a symlink whose target lies outside is refused, never followed), and
 * each act is named relative to the held, verified parent directory (`JailedDirectory`), so a
 * component swapped after the check cannot redirect it. Removing or renaming a jail root itself is
 * refused. Failures are Node's errno messages (`ENOENT: …`), as every file op answers them.
 */
import { mkdir, rename, rm, rmdir, unlink } from 'node:fs/promises'
import { basename, dirname } from 'node:path'
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import { fsRefusal } from '../files/fs-refusal.js'
import { type JailAccess, type JailedPath, resolveJailedPath } from '../files/jail.js'
import { JailedDirectory } from '../files/jailed-open.js'
import { invalidFileRequest, recursiveOf, statOf } from '../files/path-stat.js'
import type { AgentConfig } from '../handler/config.js'
import type { OpHandler } from '../handler/op-context.js'
import { OpRefusal } from '../handler/op-refusal.js'

/** Runs `act` on the path's entry in its held, verified parent directory. */
async function inParent<T>(
	jailed: JailedPath,
	shown: string,
	act: (entry: string, parent: JailedDirectory) => Promise<T>,
): Promise<T> {
	const directory = dirname(jailed.path)
	let parent: JailedDirectory
	try {
		parent = await JailedDirectory.open(directory, jailed.realRoot, shown, { create: false })
	} catch (error) {
		throw fsRefusal(error)
	}
	try {
		return await act(parent.entry(basename(jailed.path)), parent)
	} catch (error) {
		throw parent.refusal(error, directory)
	} finally {
		await parent.close()
	}
}

/** A path that is not a jail root itself (removing or renaming one is refused). */
function notARoot(config: AgentConfig, path: unknown, access: JailAccess, field: string) {
	const jailed = resolveJailedPath(config, path, access)
	if (jailed.path === jailed.root) {
		throw new OpRefusal(formatRefusal(AGENT_REFUSAL.path_is_jail_root, `${field} is a root`))
	}
	return jailed
}

export const statPath: OpHandler = async (body, ctx) => {
	const jailed = resolveJailedPath(ctx.config, body.path, 'read')
	const shown = String(body.path)
	if (jailed.path !== jailed.root) {
		ctx.reply({ ok: true, stat: await inParent(jailed, shown, (entry) => statOf(entry)) })
		return
	}
	// A root has no parent inside the jail to hold; it was admitted whole.
	try {
		ctx.reply({ ok: true, stat: await statOf(jailed.path) })
	} catch (error) {
		throw fsRefusal(error)
	}
}

export const removePath: OpHandler = async (body, ctx) => {
	const recursive = recursiveOf(body)
	const jailed = notARoot(ctx.config, body.path, 'write', 'path')
	await inParent(jailed, String(body.path), async (entry) => {
		const stat = await statOf(entry)
		if (stat.type !== 'directory') await unlink(entry)
		// rm never follows a link below it; it removes the link.
		else if (recursive) await rm(entry, { recursive: true })
		else await rmdir(entry)
	})
	ctx.reply({ ok: true })
}

export const makeDirectory: OpHandler = async (body, ctx) => {
	const recursive = recursiveOf(body)
	const jailed = resolveJailedPath(ctx.config, body.path, 'write')
	const shown = String(body.path)
	if (recursive) {
		// mkdir -p below the deepest verified ancestor; an existing directory is fine.
		const made = await JailedDirectory.open(jailed.path, jailed.realRoot, shown, { create: true })
		await made.close()
	} else {
		await inParent(jailed, shown, (entry) => mkdir(entry))
	}
	ctx.reply({ ok: true })
}

export const renamePath: OpHandler = async (body, ctx) => {
	if (typeof body.to !== 'string' || body.to === '') throw invalidFileRequest('to must be a path')
	const from = notARoot(ctx.config, body.from, 'write', 'from')
	const to = notARoot(ctx.config, body.to, 'write', 'to')
	await inParent(from, String(body.from), (source, sourceParent) =>
		inParent(to, String(body.to), async (target) => {
			sourceParent.verify()
			await rename(source, target)
		}),
	)
	ctx.reply({ ok: true })
}
