/**
 * Cursor arithmetic of `exec_read`, pure. A cursor is a byte offset in the command's one output
 * stream (stdout and stderr interleaved as they arrived), as the guest counts it. The guest answers
 * everything from the cursor; the tool hands out at most `maxBytes` of it and the cursor after the
 * last byte handed out, so a reader that comes back — after a lost connection, from another
 * client — with that cursor gets the next byte, never one twice and never one skipped.
 */
import { utf8PrefixLength } from './output-budget.js'

export interface GuestRead {
	/** The offset asked for. */
	readonly cursor: number
	readonly chunk: string
	/** Offset after the last byte of `chunk`. */
	readonly nextOffset: number
	/** Bytes between `cursor` and the chunk's start the guest no longer holds. */
	readonly droppedBytes: number
}

export interface CursorSlice {
	readonly output: string
	/** Where the next read continues. */
	readonly cursor: number
	/** Bytes held by the guest beyond what was handed out. */
	readonly remainingBytes: number
	readonly droppedBytes: number
	/** Bytes passed over without being handed out (output that is not valid UTF-8, cut). */
	readonly skippedBytes: number
}

/** At most `maxBytes` of a read, on a character boundary, and the cursor after them. */
export function sliceRead(read: GuestRead, maxBytes: number): CursorSlice {
	const start = read.cursor + read.droppedBytes
	const bytes = Buffer.from(read.chunk, 'utf8')
	const span = Math.max(0, read.nextOffset - start)
	const droppedBytes = read.droppedBytes
	if (bytes.length === span) {
		const taken = span <= maxBytes ? span : utf8PrefixLength(bytes, maxBytes)
		return {
			output: bytes.subarray(0, taken).toString('utf8'),
			cursor: start + taken,
			remainingBytes: span - taken,
			droppedBytes,
			skippedBytes: 0,
		}
	}
	// The guest's bytes were not valid UTF-8 (its decoder replaced some), so characters no longer
	// map onto offsets: the read is handed out whole, or cut and the rest of it passed over.
	if (bytes.length <= maxBytes) {
		return {
			output: read.chunk,
			cursor: read.nextOffset,
			remainingBytes: 0,
			droppedBytes,
			skippedBytes: 0,
		}
	}
	const taken = utf8PrefixLength(bytes, maxBytes)
	return {
		output: bytes.subarray(0, taken).toString('utf8'),
		cursor: read.nextOffset,
		remainingBytes: 0,
		droppedBytes,
		skippedBytes: Math.max(0, span - taken),
	}
}
