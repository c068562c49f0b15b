/**
 * One part of a chunked `write-file`: appended at `offset` to a temp file the host named, which must
 * already hold exactly `offset` bytes (0 creates or truncates it), so a missing or repeated part is
 * refused instead of landing in the wrong place. The final part is made durable and renamed onto
 * `renameTo`, which is jailed before any byte is written.
 */

import { constants } from 'node:fs'
import { type FileHandle, lstat, open, unlink } from 'node:fs/promises'
import { basename, dirname } from 'node:path'
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import type { AgentConfig } from '../handler/config.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { commitTemp } from './durable-commit.js'
import { errnoCode, fsRefusal } from './fs-refusal.js'
import { type JailedPath, resolveJailedPath } from './jail.js'
import { JailedDirectory } from './jailed-open.js'
import { isTempFileName } from './temp-sibling.js'

type JailConfig = Pick<AgentConfig, 'workspace' | 'readRoots' | 'writeRoots'>

export interface PartReply {
	readonly ok: true
	readonly bytesWritten: number
	readonly sizeBytes?: number
}

/** Temp files with a part being written right now (absolute paths). */
const inFlight = new Set<string>()

function resolveTempFile(config: JailConfig, path: string): JailedPath {
	const temp = resolveJailedPath(config, path, 'write')
	if (!isTempFileName(basename(temp.path))) {
		throw new OpRefusal(
			AGENT_REFUSAL.write_part_not_a_temp_file,
			`not a .namzu-write-….part file: ${path}`,
		)
	}
	return temp
}

/** The part's file and, on the final part, where it goes: as jailed, and as the caller named them. */
interface PartPlaces {
	readonly temp: JailedPath
	readonly tempShown: string
	readonly target?: { readonly jailed: JailedPath; readonly shown: string }
}

export async function writePart(
	config: JailConfig,
	part: { path: string; content: Buffer; offset: number; renameTo?: string },
): Promise<PartReply> {
	const temp = resolveTempFile(config, part.path)
	// Jailed before anything touches the temp file: a refused target leaves it as it was.
	const target =
		part.renameTo === undefined
			? undefined
			: { jailed: resolveJailedPath(config, part.renameTo, 'write'), shown: part.renameTo }
	if (inFlight.has(temp.path)) throw new OpRefusal(AGENT_REFUSAL.write_part_in_flight)
	inFlight.add(temp.path)
	try {
		const places = { temp, tempShown: part.path, ...(target ? { target } : {}) }
		return await appendPart(places, part.content, part.offset)
	} finally {
		inFlight.delete(temp.path)
	}
}

/** The held directory of a jailed file; with `create: false` a missing one is `ENOENT`. */
function holdParent(jailed: JailedPath, shown: string, create: boolean): Promise<JailedDirectory> {
	return JailedDirectory.open(dirname(jailed.path), jailed.realRoot, shown, { create })
}

async function appendPart(places: PartPlaces, content: Buffer, offset: number): Promise<PartReply> {
	const { temp, tempShown } = places
	const tempName = basename(temp.path)
	let directory: JailedDirectory
	try {
		directory = await holdParent(temp, tempShown, offset === 0)
	} catch (error) {
		if (errnoCode(error) === 'ENOENT') throw offsetMismatch(0, offset)
		throw error
	}
	try {
		return await appendInto(places, directory, tempName, content, offset)
	} finally {
		await directory.close()
	}
}

async function appendInto(
	places: PartPlaces,
	directory: JailedDirectory,
	tempName: string,
	content: Buffer,
	offset: number,
): Promise<PartReply> {
	const flags =
		offset === 0
			? constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW
			: constants.O_WRONLY | constants.O_NOFOLLOW
	const directoryPath = dirname(places.temp.path)
	let handle: FileHandle
	try {
		handle = await open(directory.entry(tempName), flags, 0o666)
	} catch (error) {
		if (errnoCode(error) === 'ENOENT') throw offsetMismatch(0, offset)
		throw directory.refusal(error, directoryPath)
	}
	let owned = true
	try {
		// Opened by name inside the held directory, which was verified once held and is verified
		// again before the rename.
		const { size } = await handle.stat()
		if (size !== offset) throw offsetMismatch(size, offset)
		// One pwrite: a short count (free space, RLIMIT_FSIZE) is refused, never renamed.
		const { bytesWritten } = await handle.write(content, 0, content.length, offset)
		if (bytesWritten !== content.length) {
			throw new OpRefusal(
				formatRefusal(
					AGENT_REFUSAL.write_part_short_write,
					`wrote ${bytesWritten} of ${content.length} bytes at offset ${offset}`,
				),
			)
		}
		const { target } = places
		if (target === undefined) return { ok: true, bytesWritten }
		const sizeBytes = offset + bytesWritten
		const targetDirectory = await holdParent(target.jailed, target.shown, true)
		try {
			owned = false
			await commitTemp(
				handle,
				{ directory, name: tempName },
				{ directory: targetDirectory, name: basename(target.jailed.path) },
			)
		} finally {
			await targetDirectory.close()
		}
		return { ok: true, bytesWritten, sizeBytes }
	} catch (error) {
		throw directory.refusal(error, directoryPath)
	} finally {
		if (owned) await handle.close().catch(() => undefined)
	}
}

function offsetMismatch(tempBytes: number, offset: number): OpRefusal {
	return new OpRefusal(
		AGENT_REFUSAL.write_part_offset_mismatch,
		`temp file holds ${tempBytes} bytes; part starts at ${offset}`,
	)
}

/** Removes one of the agent's own temp files; a missing one counts as removed. */
export async function discardPart(config: JailConfig, path: string): Promise<void> {
	const temp = resolveTempFile(config, path)
	let directory: JailedDirectory
	try {
		directory = await holdParent(temp, path, false)
	} catch (error) {
		if (errnoCode(error) === 'ENOENT') return
		throw fsRefusal(error)
	}
	const entry = directory.entry(basename(temp.path))
	try {
		const stat = await lstat(entry)
		if (!stat.isFile()) throw new OpRefusal(AGENT_REFUSAL.write_part_not_a_temp_file)
		await unlink(entry)
	} catch (error) {
		if (errnoCode(error) === 'ENOENT') return
		throw directory.refusal(error, dirname(temp.path))
	} finally {
		await directory.close()
	}
}
