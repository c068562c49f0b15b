/**
 * The client-to-upstream half of a plain HTTP tunnel: passes the first request's body through and
 * drops every byte after it, so a pipelined second request (another Host, no credentials check)
 * never reaches the upstream, whatever the upstream does with `Connection: close`. Unread bytes
 * left at an upstream that closes also turn its FIN into a reset that can lose the response.
 *
 * An upgrade request (WebSocket) is the one exception: what follows it is held, bounded, until the
 * upstream answers — `release()` on `101 Switching Protocols` (the bytes are then the new
 * protocol's, not HTTP requests), `seal()` on anything else (dropped, as for every request).
 */
import { Transform, type TransformCallback } from 'node:stream'
import { advanceBody, type BodyFraming } from './request-body-framing.js'

/** Bytes a client may send after an upgrade request before the upstream has answered it. */
export const MAX_HELD_UPGRADE_BYTES = 64 * 1024

type After = 'drop' | 'hold' | 'pass'

export class FirstRequestOnly extends Transform {
	#framing: BodyFraming
	#after: After
	#held: Buffer[] = []
	#heldBytes = 0

	constructor(framing: BodyFraming, holdAfter = false) {
		super()
		this.#framing = framing
		this.#after = holdAfter ? 'hold' : 'drop'
	}

	/** Feeds bytes that arrived with the head; returns what of them to forward now. */
	admit(bytes: Buffer): Buffer | Error {
		if (this.#framing.kind === 'done') return this.#afterFirst(bytes)
		const advance = advanceBody(this.#framing, bytes)
		if (advance.kind === 'invalid') return new Error(advance.reason)
		this.#framing = advance.framing
		const body = bytes.subarray(0, advance.consumed)
		if (advance.consumed === bytes.length) return body
		const later = this.#afterFirst(bytes.subarray(advance.consumed))
		return later instanceof Error ? later : Buffer.concat([body, later])
	}

	/** The upstream switched protocols: everything held and everything after goes through. */
	release(): void {
		const held = this.#settle('pass')
		if (held.length > 0) this.push(held)
	}

	/** The upstream answered without switching: nothing after the first request is ever sent. */
	seal(): void {
		this.#settle('drop')
	}

	/** Leaves `hold` for `after` (once), handing back what was held. */
	#settle(after: 'pass' | 'drop'): Buffer {
		if (this.#after !== 'hold') return Buffer.alloc(0)
		this.#after = after
		const held = Buffer.concat(this.#held)
		this.#held = []
		this.#heldBytes = 0
		return held
	}

	#afterFirst(bytes: Buffer): Buffer | Error {
		if (this.#after === 'pass') return bytes
		if (this.#after === 'hold') {
			this.#heldBytes += bytes.length
			if (this.#heldBytes > MAX_HELD_UPGRADE_BYTES) {
				return new Error(`over ${MAX_HELD_UPGRADE_BYTES} bytes sent before the upgrade answer`)
			}
			this.#held.push(Buffer.from(bytes))
		}
		return Buffer.alloc(0)
	}

	override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
		const forward = this.admit(chunk)
		if (forward instanceof Error) {
			done(forward)
			return
		}
		if (forward.length > 0) this.push(forward)
		done()
	}
}

/** Of `early` (what arrived behind the head), the body bytes of the first request, and the stream
 * that passes the rest of that body and nothing after it (held, for an upgrade request, until
 * `release()` or `seal()`); an Error when the body's framing breaks. */
export function firstRequestOf(
	framing: BodyFraming,
	early: Buffer,
	holdAfter = false,
): { readonly early: Buffer; readonly rest: FirstRequestOnly } | Error {
	const rest = new FirstRequestOnly(framing, holdAfter)
	const body = rest.admit(early)
	return body instanceof Error ? body : { early: body, rest }
}
