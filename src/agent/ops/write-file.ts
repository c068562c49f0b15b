import { constants } from 'node:fs'
import { type FileHandle, open, unlink } from 'node:fs/promises'
import { basename, dirname } from 'node:path'
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import { commitTemp } from '../files/durable-commit.js'
import { resolveJailedPath } from '../files/jail.js'
import { JailedDirectory } from '../files/jailed-open.js'
import { tempSiblingName } from '../files/temp-sibling.js'
import { discardPart, writePart } from '../files/write-parts.js'
import { parseWriteRequest } from '../files/write-request.js'
import { GUEST_BOOT_ID } from '../lifecycle/guest-boot-id.js'
import type { AgentConfig } from '../server/config.js'
import type { OpHandler } from '../server/op-context.js'
import { OpRefusal } from '../server/op-refusal.js'

/**
 * `write-file`: a whole body replaced atomically and durably, or one part of a chunked body, or the
 * discard of a part sequence's temp file.
 */
export const writeFile: OpHandler = async (body, ctx) => {
	const request = parseWriteRequest(body)
	switch (request.kind) {
		case 'discard':
			await discardPart(ctx.config, request.path)
			ctx.reply({ ok: true, guestBootId: GUEST_BOOT_ID, bytesWritten: 0, discarded: true })
			return
		case 'part':
			ctx.reply({ ...(await writePart(ctx.config, request)), guestBootId: GUEST_BOOT_ID })
			return
		case 'whole':
			ctx.reply({
				ok: true,
				guestBootId: GUEST_BOOT_ID,
				bytesWritten: await writeWhole(ctx.config, request.path, request.content),
			})
			return
	}
}

/**
 * Temp sibling (`O_EXCL`) created in the held target directory, verified, written, size checked,
 * then the durable commit. Any failure removes the temp file and leaves the target as it was.
 */
export async function writeWhole(
	config: Pick<AgentConfig, 'workspace' | 'readRoots' | 'writeRoots'>,
	path: string,
	content: Buffer,
): Promise<number> {
	const jailed = resolveJailedPath(config, path, 'write')
	const directoryPath = dirname(jailed.path)
	const name = basename(jailed.path)
	const directory = await JailedDirectory.open(directoryPath, jailed.realRoot, path, {
		create: true,
	})
	try {
		const temp = tempSiblingName(name)
		let handle: FileHandle
		try {
			handle = await open(
				directory.entry(temp),
				constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
				0o666,
			)
		} catch (error) {
			throw directory.refusal(error, directoryPath)
		}
		let committing = false
		try {
			// The temp file was created by name inside the held, verified directory: verifying that
			// directory again before the rename (commitTemp) covers it, whatever its path's length.
			await writeAll(handle, content)
			const { size } = await handle.stat()
			if (size !== content.length) {
				throw new OpRefusal(
					formatRefusal(
						AGENT_REFUSAL.write_short_write,
						`wrote ${size} of ${content.length} bytes`,
					),
				)
			}
			committing = true
			await commitTemp(handle, { directory, name: temp }, { directory, name })
			return content.length
		} catch (error) {
			if (!committing) await handle.close().catch(() => undefined)
			await unlink(directory.entry(temp)).catch(() => undefined)
			throw directory.refusal(error, directoryPath)
		}
	} finally {
		await directory.close()
	}
}

async function writeAll(handle: FileHandle, content: Buffer): Promise<void> {
	let written = 0
	while (written < content.length) {
		const { bytesWritten } = await handle.write(content, written, content.length - written, written)
		if (bytesWritten === 0) break
		written += bytesWritten
	}
}
