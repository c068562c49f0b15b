import type { FileHandle } from 'node:fs/promises'
import { AGENT_REFUSAL } from '../../wire/refusals.js'
import { fsRefusal } from '../files/fs-refusal.js'
import { openJailedForRead } from '../files/jailed-open.js'
import { rangeTooLarge, resolveReadRange } from '../files/read-range.js'
import type { OpHandler } from '../handler/op-context.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { guestBootId } from '../lifecycle/guest-boot-id.js'

const SCAN_CHUNK_BYTES = 64 * 1024

/**
 * `read-file`: the whole file in one reply, or one slice `pread` at `offset` (base64 only, at most
 * `NAMZU_AGENT_READ_FILE_RANGE_BYTES`). `sizeBytes` is always the whole file's size.
 */
export const readFile: OpHandler = async (body, ctx) => {
	const range = resolveReadRange(body, ctx.config.readFileRangeBytes)
	const encoding = body.encoding === 'base64' ? 'base64' : 'utf8'
	const handle = await openJailedForRead(ctx.config, body.path)
	try {
		const stat = await handle.stat()
		if (!stat.isFile() && !stat.isDirectory())
			throw new OpRefusal(AGENT_REFUSAL.read_file_not_a_regular_file)
		if (!range.ranged) {
			// FileHandle.readFile reads to EOF when stat says 0 bytes (the procfs shape).
			const content = await handle.readFile()
			ctx.reply({
				ok: true,
				guestBootId: guestBootId(),
				content: content.toString(encoding),
				sizeBytes: content.length,
				encoding,
			})
			return
		}
		const slice =
			stat.size === 0
				? await readSliceByScanning(
						handle,
						range.offset,
						range.length,
						ctx.config.readFileRangeBytes,
					)
				: await readSlice(
						handle,
						stat.size,
						range.offset,
						range.length,
						ctx.config.readFileRangeBytes,
					)
		ctx.reply({
			ok: true,
			guestBootId: guestBootId(),
			content: slice.bytes.toString('base64'),
			sizeBytes: slice.sizeBytes,
			encoding: 'base64',
			offset: range.offset,
			bytesRead: slice.bytes.length,
		})
	} catch (error) {
		throw fsRefusal(error)
	} finally {
		await handle.close().catch(() => undefined)
	}
}

interface Slice {
	readonly bytes: Buffer
	readonly sizeBytes: number
}

async function readSlice(
	handle: FileHandle,
	sizeBytes: number,
	offset: number,
	length: number | undefined,
	limitBytes: number,
): Promise<Slice> {
	const wanted = length ?? Math.max(0, sizeBytes - offset)
	if (wanted > limitBytes) throw rangeTooLarge(wanted, limitBytes)
	// Past EOF returns what exists: never allocate beyond the file's end.
	const buffer = Buffer.alloc(Math.min(wanted, Math.max(0, sizeBytes - offset)))
	let filled = 0
	while (filled < buffer.length) {
		const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, offset + filled)
		if (bytesRead === 0) break
		filled += bytesRead
	}
	return { bytes: buffer.subarray(0, filled), sizeBytes }
}

/** A file whose `stat` size is 0 but which has content: read to EOF, keeping only the slice. */
async function readSliceByScanning(
	handle: FileHandle,
	offset: number,
	length: number | undefined,
	limitBytes: number,
): Promise<Slice> {
	const kept: Buffer[] = []
	let keptBytes = 0
	let position = 0
	const chunk = Buffer.alloc(SCAN_CHUNK_BYTES)
	for (;;) {
		const { bytesRead } = await handle.read(chunk, 0, chunk.length, position)
		if (bytesRead === 0) break
		const start = Math.max(offset, position)
		const end = Math.min(position + bytesRead, length === undefined ? Infinity : offset + length)
		if (end > start) {
			kept.push(Buffer.from(chunk.subarray(start - position, end - position)))
			keptBytes += end - start
			if (keptBytes > limitBytes) throw rangeTooLarge(keptBytes, limitBytes)
		}
		position += bytesRead
	}
	return { bytes: Buffer.concat(kept, keptBytes), sizeBytes: position }
}
