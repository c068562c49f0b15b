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
import type { AgentConfig } from '../server/config.js'
import { OpRefusal } from '../server/op-refusal.js'
import { commitTemp, makeParents } from './durable-commit.js'
import { errnoCode, fsRefusal } from './fs-refusal.js'
import { resolveWritablePath } from './jail.js'
import { isTempFileName } from './temp-sibling.js'

type JailConfig = Pick<AgentConfig, 'workspace' | 'readRoots' | 'writeRoots'>

export interface PartReply {
	readonly ok: true
	readonly bytesWritten: number
	readonly sizeBytes?: number
}

/** Temp files with a part being written right now (absolute paths). */
const inFlight = new Set<string>()

function resolveTempFile(config: JailConfig, path: string): string {
	const temp = resolveWritablePath(config, path)
	if (!isTempFileName(basename(temp))) {
		throw new OpRefusal(
			AGENT_REFUSAL.write_part_not_a_temp_file,
			`not a .namzu-write-….part file: ${path}`,
		)
	}
	return temp
}

export async function writePart(
	config: JailConfig,
	part: { path: string; content: Buffer; offset: number; renameTo?: string },
): Promise<PartReply> {
	const temp = resolveTempFile(config, part.path)
	// Jailed before anything touches the temp file: a refused target leaves it as it was.
	const target =
		part.renameTo === undefined ? undefined : resolveWritablePath(config, part.renameTo)
	if (inFlight.has(temp)) throw new OpRefusal(AGENT_REFUSAL.write_part_in_flight)
	inFlight.add(temp)
	try {
		return await appendPart(temp, target, part.content, part.offset)
	} finally {
		inFlight.delete(temp)
	}
}

async function appendPart(
	temp: string,
	target: string | undefined,
	content: Buffer,
	offset: number,
): Promise<PartReply> {
	if (offset === 0) await makeParents(dirname(temp))
	const flags =
		offset === 0
			? constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW
			: constants.O_WRONLY | constants.O_NOFOLLOW
	let handle: FileHandle
	try {
		handle = await open(temp, flags, 0o666)
	} catch (error) {
		if (errnoCode(error) === 'ENOENT') throw offsetMismatch(0, offset)
		throw fsRefusal(error)
	}
	let owned = true
	try {
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
		if (target === undefined) return { ok: true, bytesWritten }
		const sizeBytes = offset + bytesWritten
		await makeParents(dirname(target))
		owned = false
		await commitTemp(handle, temp, target, dirname(target))
		return { ok: true, bytesWritten, sizeBytes }
	} catch (error) {
		throw fsRefusal(error)
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
	try {
		const stat = await lstat(temp)
		if (!stat.isFile()) throw new OpRefusal(AGENT_REFUSAL.write_part_not_a_temp_file)
		await unlink(temp)
	} catch (error) {
		if (errnoCode(error) === 'ENOENT') return
		throw fsRefusal(error)
	}
}
