/**
 * The durable end of every write: carry the target's mode onto the temp file, `fsync` it, rename it
 * onto the target, `fsync` the directory. A reply of `ok` after this means the bytes and the new
 * name are on the device; a failure before the rename leaves the previous target untouched.
 */

import { constants } from 'node:fs'
import { type FileHandle, mkdir, open, rename, stat } from 'node:fs/promises'
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import { OpRefusal } from '../server/op-refusal.js'
import { errnoCode } from './fs-refusal.js'

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

export async function fsyncDirectory(directory: string): Promise<void> {
	const handle = await open(directory, constants.O_RDONLY | constants.O_DIRECTORY)
	try {
		await handle.sync()
	} finally {
		await handle.close()
	}
}

/**
 * Mode, fsync, close, rename, directory fsync. Closes `handle` itself (the caller must not); the
 * caller removes `tempPath` if this throws.
 */
export async function commitTemp(
	handle: FileHandle,
	tempPath: string,
	targetPath: string,
	targetDirectory: string,
): Promise<void> {
	try {
		await carryMode(handle, targetPath)
		await handle.sync()
	} finally {
		await handle.close().catch(() => undefined)
	}
	await rename(tempPath, targetPath)
	await fsyncDirectory(targetDirectory)
}

/** `mkdir -p` for a directory the jail already admitted. */
export async function makeParents(directory: string): Promise<void> {
	try {
		await mkdir(directory, { recursive: true })
	} catch (error) {
		const message = error instanceof Error ? error.message : String(error)
		throw new OpRefusal(formatRefusal(AGENT_REFUSAL.mkdir_failed, message))
	}
}
