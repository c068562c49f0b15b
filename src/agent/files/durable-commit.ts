/**
 * The durable end of every write: carry the target's mode onto the temp file, `fsync` it, verify
 * both directories are still inside the jail, rename the temp file onto the target, `fsync` the
 * directory. Both names are taken relative to held directory descriptors (jailed-open.ts). A reply
 * of `ok` after this means the bytes and the new name are on the device; a failure before the
 * rename leaves the previous target untouched.
 */

import type { FileHandle } from 'node:fs/promises'
import { rename, stat } from 'node:fs/promises'
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { errnoCode } from './fs-refusal.js'
import type { JailedDirectory } from './jailed-open.js'

/** A name inside a held directory. */
export interface HeldName {
	readonly directory: JailedDirectory
	readonly name: string
}

/** Carries `target`'s permission bits onto `handle` when the target exists. */
export async function carryMode(handle: FileHandle, target: string): Promise<void> {
	let mode: number
	try {
		mode = (await stat(target)).mode & 0o7777
	} catch (error) {
		if (errnoCode(error) === 'ENOENT') return
		throw modeCarryFailed(error)
	}
	try {
		await handle.chmod(mode)
	} catch (error) {
		throw modeCarryFailed(error)
	}
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
	try {
		await carryMode(handle, target.directory.entry(target.name))
		await handle.sync()
	} finally {
		await handle.close().catch(() => undefined)
	}
	// Last look before the file is put into place: neither directory may have left the jail.
	temp.directory.verify()
	target.directory.verify()
	await rename(temp.directory.entry(temp.name), target.directory.entry(target.name))
	await target.directory.handle.sync()
}
