import { constants } from 'node:fs'
import { type FileHandle, open, unlink } from 'node:fs/promises'
import { basename, dirname } from 'node:path'
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import { commitTemp } from '../files/durable-commit.js'
import { IncomingBytes } from '../files/incoming-bytes.js'
import { resolveJailedPath } from '../files/jail.js'
import { JailedDirectory } from '../files/jailed-open.js'
import { tempSiblingName } from '../files/temp-sibling.js'
import { discardPart, writePart } from '../files/write-parts.js'
import { parseWriteRequest } from '../files/write-request.js'
import type { AgentConfig } from '../handler/config.js'
import type { OpContext, OpHandler } from '../handler/op-context.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { isIntegerIn, NON_NEGATIVE_INTEGER } from '../handler/value-checks.js'
import { guestBootId } from '../lifecycle/guest-boot-id.js'

/**
 * `write-file`: a whole body replaced atomically and durably, or one part of a chunked body, or the
 * discard of a part sequence's temp file; on a connection that negotiated binary frames, a whole
 * body streamed behind the envelope (`{ path, sizeBytes }`, then binary `data`, then `end`).
 */
export const writeFile: OpHandler = async (body, ctx) => {
	if (ctx.binaryFrames) {
		await writeStreamed(body, ctx)
		return
	}
	const request = parseWriteRequest(body)
	switch (request.kind) {
		case 'discard':
			await discardPart(ctx.config, request.path)
			ctx.reply({ ok: true, guestBootId: guestBootId(), bytesWritten: 0, discarded: true })
			return
		case 'part':
			ctx.reply({ ...(await writePart(ctx.config, request)), guestBootId: guestBootId() })
			return
		case 'whole':
			ctx.reply({
				ok: true,
				guestBootId: guestBootId(),
				bytesWritten: await writeWhole(ctx.config, request.path, request.content),
			})
			return
	}
}

/** The same atomic, durable replace, its content written from the frames as they arrive. */
async function writeStreamed(body: Record<string, unknown>, ctx: OpContext): Promise<void> {
	const { path, sizeBytes } = body
	if (!isIntegerIn(sizeBytes, NON_NEGATIVE_INTEGER)) {
		throw new OpRefusal(AGENT_REFUSAL.write_stream_invalid_size)
	}
	// Subscribed before anything is awaited, so no frame is missed and the queue bound holds.
	const incoming = new IncomingBytes(ctx, sizeBytes)
	if (typeof path !== 'string' || path === '') {
		throw new OpRefusal(AGENT_REFUSAL.missing_path_or_content)
	}
	let bytesWritten: number
	try {
		bytesWritten = await writeWhole(ctx.config, path, {
			sizeBytes,
			write: (handle: FileHandle) => incoming.writeTo(handle),
		})
	} catch (error) {
		incoming.discard()
		throw error
	}
	ctx.reply({ ok: true, guestBootId: guestBootId(), bytesWritten })
}

/** Content produced into the temp file by its writer, which answers the bytes it wrote. */
interface StreamedContent {
	readonly sizeBytes: number
	write(handle: FileHandle): Promise<number>
}

/**
 * Temp sibling (`O_EXCL`) created in the held target directory, verified, written, size checked,
 * then the durable commit. Any failure removes the temp file and leaves the target as it was.
 */
export async function writeWhole(
	config: Pick<AgentConfig, 'workspace' | 'readRoots' | 'writeRoots'>,
	path: string,
	content: Buffer | StreamedContent,
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
			const expected = Buffer.isBuffer(content) ? content.length : content.sizeBytes
			if (Buffer.isBuffer(content)) await writeAll(handle, content)
			else await content.write(handle)
			const { size } = await handle.stat()
			if (size !== expected) {
				throw new OpRefusal(
					formatRefusal(AGENT_REFUSAL.write_short_write, `wrote ${size} of ${expected} bytes`),
				)
			}
			committing = true
			await commitTemp(handle, { directory, name: temp }, { directory, name })
			return expected
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
