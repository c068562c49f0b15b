/**
 * One output stream of an `execute` (stdout or stderr): decodes bytes to UTF-8 text without ever
 * splitting a multi-byte character across two deltas, and enforces the per-stream byte cap. Bytes
 * past the cap are neither forwarded nor kept, and `truncated` reports that the cap fired. A
 * character cut by the cap itself is dropped rather than emitted as a replacement character.
 */
import { StringDecoder } from 'node:string_decoder'

export class OutputCapture {
	readonly #decoder = new StringDecoder('utf8')
	readonly #maxBytes: number
	#bytes = 0
	#truncated = false

	constructor(maxBytes: number) {
		this.#maxBytes = maxBytes
	}

	get truncated(): boolean {
		return this.#truncated
	}

	/** Bytes accepted so far (never more than the cap). */
	get bytes(): number {
		return this.#bytes
	}

	/** Text to forward for `chunk` ('' when nothing decodable or everything is past the cap). */
	push(chunk: Buffer): string {
		if (this.#truncated) return ''
		const room = this.#maxBytes - this.#bytes
		if (chunk.length > room) {
			this.#truncated = true
			this.#bytes += room
			// Whatever partial character the decoder still holds dies with the cap.
			return room > 0 ? this.#decoder.write(chunk.subarray(0, room)) : ''
		}
		this.#bytes += chunk.length
		return this.#decoder.write(chunk)
	}

	/** Flushes at end of stream; an incomplete trailing sequence becomes U+FFFD unless truncated. */
	end(): string {
		if (this.#truncated) return ''
		return this.#decoder.end()
	}
}
