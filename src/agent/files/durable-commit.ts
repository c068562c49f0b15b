/**
 * The durable end of every write: carry the target's mode onto the temp file, `fsync` it, verify
 * both directories are still inside the jail, rename the temp file onto the target, `fsync` the
 * directory. Both names are taken relative to held directory descriptors (jailed-open.ts). A reply
 * of `ok` after this means the bytes and the new name are on the device; a failure before the
 * rename leaves the previous target untouched.
 *
 * A large target being replaced is held open across the rename: rename(2) frees the replaced
 * file's blocks itself when it drops the last reference (15–30 ms for 64 MiB on ext4, measured),
 * on the reply's path; held, they are freed by the close, which runs after the commit, unawaited.
 * Nothing the reply promises depends on those blocks.
 */

import { constants, type Stats } from 'node:fs'
import type { FileHandle } from 'node:fs/promises'
import { open, rename, stat } from 'node:fs/promises'
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { errnoCode } from './fs-refusal.js'
import type { JailedDirectory } from './jailed-open.js'

/** A name inside a held directory. */
export interface HeldName {
	readonly directory: JailedDirectory
	readonly name: string
}

/** A replaced target at least this large is held open across the rename (module comment). */
export const HELD_TARGET_MIN_BYTES = 4 * 1024 * 1024

/**
 * Carries `target`'s permission bits onto `handle` when the target exists; answers the target's
 * stat (undefined when there is none).
 */
export async function carryMode(handle: FileHandle, target: string): Promise<Stats | undefined> {
	let targetStat: Stats
	try {
		targetStat = await stat(target)
	} catch (error) {
		if (errnoCode(error) === 'ENOENT') return undefined
		throw modeCarryFailed(error)
	}
	try {
		await handle.chmod(targetStat.mode & 0o7777)
	} catch (error) {
		throw modeCarryFailed(error)
	}
	return targetStat
}

/**
 * The replaced target, opened to be held across the rename when it is a large regular file — the
 * same one `seen` described (a link is never followed, a FIFO never waited on) — else undefined.
 * Best effort: a target that cannot be opened is not held, and the commit goes on.
 */
async function holdReplaced(
	target: string,
	seen: Stats | undefined,
): Promise<FileHandle | undefined> {
	if (seen === undefined || !seen.isFile() || seen.size < HELD_TARGET_MIN_BYTES) return undefined
	const flags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK
	const held = await open(target, flags).catch(() => undefined)
	if (held === undefined) return undefined
	const now = await held.stat().catch(() => undefined)
	if (now?.isFile() && now.ino === seen.ino && now.dev === seen.dev) return held
	await held.close().catch(() => undefined)
	return undefined
}

function modeCarryFailed(error: unknown): OpRefusal {
	const message = error instanceof Error ? error.message : String(error)
	return new OpRefusal(formatRefusal(AGENT_REFUSAL.write_mode_carry_failed, message))
}

/**
 * Mode, fsync, close, verify, rename, directory fsync. Closes `handle` itself (the caller must
 * not); the caller removes the temp file if this throws.
 */
export async function commitTemp(
	handle: FileHandle,
	temp: HeldName,
	target: HeldName,
): Promise<void> {
	let replaced: Stats | undefined
	try {
		replaced = await carryMode(handle, target.directory.entry(target.name))
		await handle.sync()
	} finally {
		await handle.close().catch(() => undefined)
	}
	const held = await holdReplaced(target.directory.entry(target.name), replaced)
	try {
		// Last look before the file is put into place: neither directory may have left the jail.
		temp.directory.verify()
		target.directory.verify()
		await rename(temp.directory.entry(temp.name), target.directory.entry(target.name))
		await target.directory.handle.sync()
	} finally {
		// Not awaited: freeing the replaced file's blocks is no part of what the reply promises.
		void held?.close().catch(() => undefined)
	}
}
