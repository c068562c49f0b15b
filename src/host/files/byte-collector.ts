/**
 * Gathers streamed chunks into one Buffer. When the size is announced up front the bytes are
 * copied straight into one allocation (so a 384 MiB read holds the file once, not twice), or are
 * already there: `place` lets the frame reader read a large binary chunk from the socket into its
 * final slice, and `push` of that slice then copies nothing. A stream that overruns or lacks the
 * announcement falls back to a chunk list.
 */
import { decodeBase64, decodeBase64Into, decodedBase64Length } from '../../wire/base64-pieces.js'
import type { BinaryChannel } from '../../wire/binary-frame.js'

export class ByteCollector {
	#buffer: Buffer | undefined
	#written = 0
	#chunks: Buffer[] = []

	/** Announces the expected total; ignored once bytes have arrived. */
	expect(totalBytes: number): void {
		if (this.#written > 0 || this.#chunks.length > 0) return
		if (Number.isSafeInteger(totalBytes) && totalBytes > 0)
			this.#buffer = Buffer.allocUnsafe(totalBytes)
	}

	/**
	 * The slice a binary `data` payload of `length` bytes at stream `offset` belongs in, once the
	 * size is announced and while it fits (a `BinaryPlacement`); undefined otherwise.
	 */
	place(channel: BinaryChannel, offset: number, length: number): Buffer | undefined {
		const buffer = this.#buffer
		if (channel !== 'data' || !buffer || offset + length > buffer.length) return undefined
		return buffer.subarray(offset, offset + length)
	}

	push(chunk: Buffer): void {
		const buffer = this.#buffer
		if (buffer && this.#written + chunk.length <= buffer.length) {
			// A placed chunk is already where it belongs.
			const inPlace =
				chunk.buffer === buffer.buffer && chunk.byteOffset === buffer.byteOffset + this.#written
			if (!inPlace) chunk.copy(buffer, this.#written)
			this.#written += chunk.length
			return
		}
		if (buffer) {
			this.#chunks.push(buffer.subarray(0, this.#written))
			this.#buffer = undefined
		}
		this.#chunks.push(chunk)
		this.#written += chunk.length
	}

	/**
	 * Decodes base64 text (given as its ASCII bytes) straight into the announced buffer when it
	 * fits; returns the decoded length.
	 */
	pushBase64(ascii: Buffer): number {
		const buffer = this.#buffer
		if (buffer && this.#written + decodedBase64Length(ascii) <= buffer.length) {
			const written = decodeBase64Into(buffer, this.#written, ascii)
			this.#written += written
			return written
		}
		const chunk = decodeBase64(ascii)
		this.push(chunk)
		return chunk.length
	}

	get byteLength(): number {
		return this.#written
	}

	toBuffer(): Buffer {
		if (this.#buffer) return this.#buffer.subarray(0, this.#written)
		return Buffer.concat(this.#chunks, this.#written)
	}
}
