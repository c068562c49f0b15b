import type { FileHandle } from 'node:fs/promises'
import { BINARY_FRAME_HEADER_BYTES, writeBinaryFrameHeader } from '../../wire/binary-frame.js'
import { base64DataFrameBytes, encodeBase64DataFrameInto } from '../../wire/frame.js'
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import { fsRefusal } from '../files/fs-refusal.js'
import { openJailedForRead } from '../files/jailed-open.js'
import { coveredBytes, resolveStreamRange, type StreamRange } from '../files/read-range.js'
import type { OpContext, OpHandler } from '../handler/op-context.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { waitForDrain } from '../handler/wait-for-drain.js'

/**
 * A file `stat` reports as empty is read to EOF before `meta` (its size is only known then); this
 * bounds that one buffered case. procfs files are far smaller.
 */
export const UNSIZED_FILE_MAX_BYTES = 64 * 1024 * 1024

/**
 * `read-file-stream`: `meta`, `data` chunks of `NAMZU_AGENT_READ_FILE_STREAM_CHUNK_BYTES` (base64
 * JSON, or binary frames when the request negotiated them) written only as fast as the socket
 * drains, `end`, terminator. Memory stays at a few chunks.
 */
export const readFileStream: OpHandler = async (body, ctx) => {
	const range = resolveStreamRange(body)
	const handle = await openJailedForRead(ctx.config, body.path)
	try {
		const stat = await handle.stat().catch((error: unknown) => {
			throw fsRefusal(error)
		})
		if (!stat.isFile()) throw new OpRefusal(AGENT_REFUSAL.read_file_stream_not_a_regular_file)
		const source = stat.size === 0 ? await bufferedSource(handle) : fileSource(handle, stat.size)
		const length = coveredBytes(source.sizeBytes, range)
		ctx.send({ type: 'meta', sizeBytes: source.sizeBytes, offset: range.offset, length })
		try {
			const bytesSent = await pump(ctx, source, range, length)
			if (bytesSent === undefined) return
			ctx.send({ type: 'end', bytesSent })
		} catch (error) {
			ctx.send({ type: 'error', error: fsRefusal(error).error })
		}
		ctx.endStream()
	} finally {
		await handle.close().catch(() => undefined)
	}
}

interface Source {
	readonly sizeBytes: number
	/** Fills `buffer` from `position`; returns the bytes read, 0 at EOF. */
	read(buffer: Buffer, length: number, position: number): Promise<number>
}

function fileSource(handle: FileHandle, sizeBytes: number): Source {
	return {
		sizeBytes,
		read: async (buffer, length, position) =>
			(await handle.read(buffer, 0, length, position)).bytesRead,
	}
}

async function bufferedSource(handle: FileHandle): Promise<Source> {
	const chunks: Buffer[] = []
	let total = 0
	for (;;) {
		const chunk = Buffer.alloc(64 * 1024)
		const { bytesRead } = await handle.read(chunk, 0, chunk.length, total)
		if (bytesRead === 0) break
		chunks.push(chunk.subarray(0, bytesRead))
		total += bytesRead
		if (total > UNSIZED_FILE_MAX_BYTES) {
			throw new OpRefusal(
				formatRefusal(
					AGENT_REFUSAL.read_file_stream_unsized_too_large,
					`a file stat reports as empty exceeded ${UNSIZED_FILE_MAX_BYTES} bytes`,
				),
			)
		}
	}
	const content = Buffer.concat(chunks, total)
	return {
		sizeBytes: total,
		read: async (buffer, length, position) =>
			content.copy(buffer, 0, position, Math.min(position + length, content.length)),
	}
}

/**
 * Bytes allowed to wait in the socket's buffer before the pump pauses for `drain`. Waiting on every
 * `write() === false` would serialise disk and socket; this keeps both busy while bounding memory
 * to this plus a frame and a read-ahead chunk.
 */
const MAX_QUEUED_BYTES = 2 * 1024 * 1024

/** Reads exactly `want` bytes at `position` into `buffer`, or refuses: never comes back short. */
async function readExactly(
	source: Source,
	range: StreamRange,
	length: number,
	at: number,
	buffer: Buffer,
): Promise<Buffer> {
	let filled = 0
	while (filled < buffer.length) {
		const bytesRead = await source.read(
			buffer.subarray(filled),
			buffer.length - filled,
			range.offset + at + filled,
		)
		if (bytesRead === 0) {
			throw new OpRefusal(
				formatRefusal(
					AGENT_REFUSAL.read_file_stream_short_read,
					`expected ${length} bytes from offset ${range.offset}, file ended after ${at + filled}`,
				),
			)
		}
		filled += bytesRead
	}
	return buffer
}

/**
 * How a stream's chunks become frames: where each chunk is read into, and the frame that carries
 * it (with what to do once the socket flushed it, so its memory can be reused).
 */
interface ChunkFramer {
	/** A buffer of `bytes` to read the next chunk into. */
	target(bytes: number): Buffer
	/** The frame carrying `chunk` (a buffer `target` gave), and its release once flushed. */
	frame(chunk: Buffer): { readonly frame: Buffer; readonly flushed: () => void }
}

/**
 * base64 JSON `data` frames: two read buffers alternate (one fills while the other is encoded)
 * and frame buffers return to a free list once flushed.
 */
function base64Framer(chunkBytes: number): ChunkFramer {
	const readBuffers = [Buffer.allocUnsafe(chunkBytes), Buffer.allocUnsafe(chunkBytes)]
	const frameBytes = base64DataFrameBytes(chunkBytes)
	const freeFrames: Buffer[] = []
	let reads = 0
	return {
		target: (bytes) =>
			(readBuffers[reads++ % 2] ?? Buffer.allocUnsafe(chunkBytes)).subarray(0, bytes),
		frame: (chunk) => {
			const target = freeFrames.pop() ?? Buffer.allocUnsafe(frameBytes)
			return {
				frame: encodeBase64DataFrameInto(target, chunk),
				flushed: () => freeFrames.push(target),
			}
		},
	}
}

/**
 * Binary frames: each chunk is read straight into a frame buffer behind its 10-byte header, so no
 * byte is copied or encoded; frame buffers return to a free list once flushed.
 */
function binaryFramer(chunkBytes: number): ChunkFramer {
	const freeFrames: Buffer[] = []
	const frameOf = new WeakMap<Buffer, Buffer>()
	return {
		target: (bytes) => {
			const frame = freeFrames.pop() ?? Buffer.allocUnsafe(BINARY_FRAME_HEADER_BYTES + chunkBytes)
			const body = frame.subarray(BINARY_FRAME_HEADER_BYTES, BINARY_FRAME_HEADER_BYTES + bytes)
			frameOf.set(body, frame)
			return body
		},
		frame: (chunk) => {
			const whole = frameOf.get(chunk)
			if (whole === undefined) throw new Error('a binary chunk must be read into its frame buffer')
			writeBinaryFrameHeader(whole, 'data', chunk.length)
			return {
				frame: whole.subarray(0, BINARY_FRAME_HEADER_BYTES + chunk.length),
				flushed: () => freeFrames.push(whole),
			}
		},
	}
}

/**
 * Sends the covered bytes; undefined when the peer went away (nothing more may be sent). Memory is
 * recycled rather than allocated per chunk (the framer's buffers), and the next chunk is read
 * while this one is written, so a 1 GiB stream costs about MAX_QUEUED_BYTES plus a few frames,
 * however long it runs.
 */
async function pump(
	ctx: OpContext,
	source: Source,
	range: StreamRange,
	length: number,
): Promise<number | undefined> {
	const chunkBytes = Math.min(ctx.config.readFileStreamChunkBytes, Math.max(length, 1))
	const framer = ctx.binaryFrames ? binaryFramer(chunkBytes) : base64Framer(chunkBytes)
	const readAt = (at: number) => {
		const buffer = framer.target(Math.min(chunkBytes, length - at))
		const pending = readExactly(source, range, length, at, buffer)
		// Observed below; this only keeps an abandoned read-ahead from being an unhandled rejection.
		pending.catch(() => undefined)
		return pending
	}
	let sent = 0
	let next = length > 0 ? readAt(0) : undefined
	while (next) {
		if (ctx.closed) return undefined
		const chunk = await next
		const after = sent + chunk.length
		// Read ahead (into another buffer) while this chunk is framed and written.
		next = after < length ? readAt(after) : undefined
		if (ctx.closed) return undefined
		const { frame, flushed } = framer.frame(chunk)
		ctx.sendFrame(frame, flushed)
		sent = after
		if (ctx.socket.writableLength > MAX_QUEUED_BYTES && !(await waitForDrain(ctx))) return undefined
	}
	return sent
}
