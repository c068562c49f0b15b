/**
 * The frame codec shared by the guest agent and the host: 8 hex digits of payload length, `\n`,
 * then that many bytes of UTF-8 JSON. The zero-length frame ends a stream.
 */

export const FRAME_HEADER_BYTES = 9
/** Largest length the 8-hex header can express; the real ceiling is the reader's `maxFrameBytes`. */
export const MAX_ENCODABLE_FRAME_BYTES = 0xffffffff
export const STREAM_TERMINATOR: Buffer = Buffer.from('00000000\n', 'latin1')

export function encodeFrame(message: unknown): Buffer {
	return encodeFramePayload(Buffer.from(JSON.stringify(message), 'utf8'))
}

export function encodeFramePayload(payload: Buffer): Buffer {
	if (payload.length > MAX_ENCODABLE_FRAME_BYTES) {
		throw new RangeError(`frame payload of ${payload.length} bytes cannot be encoded`)
	}
	const header = Buffer.from(`${payload.length.toString(16).padStart(8, '0')}\n`, 'latin1')
	return Buffer.concat([header, payload], FRAME_HEADER_BYTES + payload.length)
}

/** Bytes a frame carrying `message` occupies on the wire, header included. */
export function encodedFrameBytes(message: unknown): number {
	return FRAME_HEADER_BYTES + Buffer.byteLength(JSON.stringify(message), 'utf8')
}

export type FrameErrorReason = 'bad_header' | 'frame_too_large'

/** The peer broke the framing. `message` is the refusal the agent sends back verbatim. */
export class FrameError extends Error {
	override readonly name = 'FrameError'
	readonly reason: FrameErrorReason
	readonly announcedBytes?: number
	readonly limitBytes?: number
	readonly limitVariable?: string

	constructor(
		reason: FrameErrorReason,
		message: string,
		details: { announcedBytes?: number; limitBytes?: number; limitVariable?: string } = {},
	) {
		super(message)
		this.reason = reason
		if (details.announcedBytes !== undefined) this.announcedBytes = details.announcedBytes
		if (details.limitBytes !== undefined) this.limitBytes = details.limitBytes
		if (details.limitVariable !== undefined) this.limitVariable = details.limitVariable
	}
}

export function frameTooLargeMessage(announced: number, limit: number, variable: string): string {
	return `frame_too_large: announced ${announced} bytes, limit ${limit} (${variable})`
}

export type FrameItem =
	| { readonly kind: 'frame'; readonly payload: Buffer }
	| { readonly kind: 'end' }

export interface FrameReaderOptions {
	/** Largest payload a header may announce. */
	readonly maxFrameBytes: number
	/** The setting that governs the limit, named in `frame_too_large` refusals. */
	readonly limitVariable: string
}

const INITIAL_CAPACITY = 64 * 1024

function isHexDigit(byte: number): boolean {
	return (
		(byte >= 0x30 && byte <= 0x39) ||
		(byte >= 0x61 && byte <= 0x66) ||
		(byte >= 0x41 && byte <= 0x46)
	)
}

/**
 * Incremental frame parser. Accumulates into ONE buffer grown geometrically, so a large frame
 * costs O(n) copying rather than re-concatenating every chunk. Throws `FrameError` as soon as the
 * bytes seen prove the framing broken: a non-hex byte in the first eight, or a ninth that is not
 * a newline, or an announced length above the limit.
 */
export class FrameReader {
	#buffer: Buffer = Buffer.allocUnsafe(0)
	#start = 0
	#end = 0
	#maxFrameBytes: number
	#limitVariable: string

	constructor(options: FrameReaderOptions) {
		this.#maxFrameBytes = options.maxFrameBytes
		this.#limitVariable = options.limitVariable
	}

	/** Changes the ceiling for frames not yet started (e.g. once a connection authenticates). */
	setLimit(maxFrameBytes: number, limitVariable: string): void {
		this.#maxFrameBytes = maxFrameBytes
		this.#limitVariable = limitVariable
	}

	get maxFrameBytes(): number {
		return this.#maxFrameBytes
	}

	/** Bytes received and not yet handed out as frames. */
	get bufferedBytes(): number {
		return this.#end - this.#start
	}

	push(chunk: Buffer): FrameItem[] {
		this.#append(chunk)
		const items: FrameItem[] = []
		for (;;) {
			const available = this.#end - this.#start
			const headerBytes = Math.min(available, FRAME_HEADER_BYTES)
			for (let i = 0; i < Math.min(headerBytes, 8); i++) {
				const byte = this.#buffer[this.#start + i] ?? 0
				if (!isHexDigit(byte)) {
					throw new FrameError('bad_header', 'bad_frame_header: length prefix is not 8 hex digits')
				}
			}
			if (available < FRAME_HEADER_BYTES) break
			if (this.#buffer[this.#start + 8] !== 0x0a) {
				throw new FrameError('bad_header', 'bad_frame_header: no newline after 8 hex digits')
			}
			const length = Number.parseInt(
				this.#buffer.toString('latin1', this.#start, this.#start + 8),
				16,
			)
			if (length > this.#maxFrameBytes) {
				throw new FrameError(
					'frame_too_large',
					frameTooLargeMessage(length, this.#maxFrameBytes, this.#limitVariable),
					{
						announcedBytes: length,
						limitBytes: this.#maxFrameBytes,
						limitVariable: this.#limitVariable,
					},
				)
			}
			if (length === 0) {
				this.#start += FRAME_HEADER_BYTES
				items.push({ kind: 'end' })
				continue
			}
			if (available < FRAME_HEADER_BYTES + length) {
				this.#reserve(FRAME_HEADER_BYTES + length)
				break
			}
			const from = this.#start + FRAME_HEADER_BYTES
			// Copy out so the payload survives later compaction of the shared buffer.
			const payload = Buffer.from(this.#buffer.subarray(from, from + length))
			this.#start = from + length
			items.push({ kind: 'frame', payload })
		}
		if (this.#start === this.#end) {
			this.#start = 0
			this.#end = 0
		}
		return items
	}

	#append(chunk: Buffer): void {
		this.#reserve(this.#end - this.#start + chunk.length)
		chunk.copy(this.#buffer, this.#end)
		this.#end += chunk.length
	}

	/** Ensures room for `needed` bytes from `#start`, compacting or doubling as required. */
	#reserve(needed: number): void {
		if (this.#start + needed <= this.#buffer.length) return
		const used = this.#end - this.#start
		if (needed <= this.#buffer.length && this.#start > 0) {
			this.#buffer.copy(this.#buffer, 0, this.#start, this.#end)
			this.#start = 0
			this.#end = used
			return
		}
		// Geometric growth for unknown sizes; exact when the header already told us the frame size.
		const capacity = Math.max(needed, this.#buffer.length * 2, INITIAL_CAPACITY)
		const next = Buffer.allocUnsafe(capacity)
		this.#buffer.copy(next, 0, this.#start, this.#end)
		this.#buffer = next
		this.#start = 0
		this.#end = used
	}
}

/** Parses a frame payload as a JSON object; throws `SyntaxError`/`TypeError` on anything else. */
export function parseFramePayload(payload: Buffer): Record<string, unknown> {
	const value: unknown = JSON.parse(payload.toString('utf8'))
	if (value === null || typeof value !== 'object' || Array.isArray(value)) {
		throw new TypeError('frame payload is not a JSON object')
	}
	return value as Record<string, unknown>
}
