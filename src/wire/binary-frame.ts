/**
 * The negotiated binary data frame, shared by the guest and the host: 8 hex digits of the raw
 * byte count, `#` where a JSON frame has `\n`, one channel byte, then the raw bytes — no base64,
 * no JSON. A binary frame stands for exactly one `{ type, data }` event of its channel, with the
 * bytes in place of the text. It is sent only on a connection whose open request carried
 * `binaryFrames: true` to a guest advertising `BINARY_FRAMES_FEATURE`; a reader that was not told
 * the connection negotiated it refuses the header before reading any payload (`frame.ts`).
 */
/** Header of a binary frame: 8 hex digits, the marker, the channel byte. */
export const BINARY_FRAME_HEADER_BYTES = 10
/** The ninth header byte that marks a binary frame (a JSON frame's is `\n`). */
export const BINARY_FRAME_MARKER = 0x23

/** Channel byte → the event type whose `data` the frame carries. */
export const BINARY_CHANNELS = {
	/** `read-file-stream` chunks, terminal output, tcp bytes both ways, streamed `write-file` content. */
	data: 0x64,
	/** `execute` output: the UTF-8 bytes of one `stdout_delta` / `stderr_delta`. */
	stdout_delta: 0x6f,
	stderr_delta: 0x65,
} as const

export type BinaryChannel = keyof typeof BINARY_CHANNELS

const CHANNEL_BY_BYTE = new Map<number, BinaryChannel>(
	(Object.keys(BINARY_CHANNELS) as BinaryChannel[]).map((name) => [BINARY_CHANNELS[name], name]),
)

/** The channel a header byte names, or undefined for a byte no channel has. */
export function binaryChannelOf(byte: number): BinaryChannel | undefined {
	return CHANNEL_BY_BYTE.get(byte)
}

/** Largest raw byte count the 8-hex header can express. */
const MAX_BINARY_FRAME_BYTES = 0xffffffff

/** The 10-byte header of a binary frame carrying `byteLength` raw bytes on `channel`. */
export function encodeBinaryFrameHeader(channel: BinaryChannel, byteLength: number): Buffer {
	if (!Number.isSafeInteger(byteLength) || byteLength < 0 || byteLength > MAX_BINARY_FRAME_BYTES) {
		throw new RangeError(`binary frame of ${byteLength} bytes cannot be encoded`)
	}
	const header = Buffer.allocUnsafe(BINARY_FRAME_HEADER_BYTES)
	writeBinaryFrameHeader(header, channel, byteLength)
	return header
}

/** Writes the header into the first 10 bytes of `target` (a sender filling its own buffer). */
export function writeBinaryFrameHeader(
	target: Buffer,
	channel: BinaryChannel,
	byteLength: number,
): void {
	target.write(byteLength.toString(16).padStart(8, '0'), 0, 'latin1')
	target[8] = BINARY_FRAME_MARKER
	target[9] = BINARY_CHANNELS[channel]
}

/** A whole binary frame (header and a copy of `bytes`) in one Buffer. */
export function encodeBinaryFrame(channel: BinaryChannel, bytes: Uint8Array): Buffer {
	const frame = Buffer.allocUnsafe(BINARY_FRAME_HEADER_BYTES + bytes.byteLength)
	writeBinaryFrameHeader(frame, channel, bytes.byteLength)
	frame.set(bytes, BINARY_FRAME_HEADER_BYTES)
	return frame
}

/**
 * What a binary frame is read as: the event of its channel with the raw bytes in `bytes` (a
 * Buffer, which no JSON frame can produce, so `binaryEventBytes` cannot be fooled by one).
 */
export interface BinaryEvent {
	readonly type: BinaryChannel
	readonly bytes: Buffer
	/**
	 * Gives `bytes`' buffer back to the reader for a later frame (frame-reader.ts). Only the one
	 * consumer that is done with the bytes for good calls it (`releaseBinaryEventBytes`); without
	 * the call the bytes are never overwritten.
	 */
	readonly release?: () => void
}

export function binaryEvent(
	channel: BinaryChannel,
	bytes: Buffer,
	release?: () => void,
): BinaryEvent {
	return release === undefined ? { type: channel, bytes } : { type: channel, bytes, release }
}

/** The raw bytes of an event read from a binary frame; undefined for any JSON event. */
export function binaryEventBytes(event: Record<string, unknown>): Buffer | undefined {
	return Buffer.isBuffer(event.bytes) ? event.bytes : undefined
}

/**
 * Hands a binary event's bytes back to the reader that lent them: the caller promises never to
 * read or keep them again. A no-op for JSON events (no JSON value is a function) and for bytes
 * that were not lent.
 */
export function releaseBinaryEventBytes(event: Record<string, unknown>): void {
	const { release } = event
	if (typeof release === 'function') release()
}

/**
 * The open request's body with `binaryFrames: true` when the host asks (a guest that advertises
 * the feature then answers, and accepts, binary frames on that connection only).
 */
export function withBinaryFramesRequest(body: unknown, ask: boolean): unknown {
	if (!ask) return body
	if (body === null || typeof body !== 'object' || Array.isArray(body)) return body
	return { ...body, binaryFrames: true }
}

/** Whether an open request's body asks for binary frames. */
export function asksForBinaryFrames(body: unknown): boolean {
	return (
		body !== null &&
		typeof body === 'object' &&
		(body as { binaryFrames?: unknown }).binaryFrames === true
	)
}
