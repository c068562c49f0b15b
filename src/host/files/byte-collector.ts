/**
 * Gathers streamed chunks into one Buffer. When the size is announced up front the bytes are
 * copied straight into one allocation (so a 384 MiB read holds the file once, not twice); a
 * stream that overruns or lacks the announcement falls back to a chunk list.
 */
import { decodeBase64, decodeBase64Into, decodedBase64Length } from '../../wire/base64-pieces.js'

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

	push(chunk: Buffer): void {
		const buffer = this.#buffer
		if (buffer && this.#written + chunk.length <= buffer.length) {
			chunk.copy(buffer, this.#written)
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
