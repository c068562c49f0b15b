/**
 * The client-to-upstream half of a plain HTTP tunnel: passes the first request's body through and
 * drops every byte after it, so a pipelined second request (another Host, no credentials check)
 * never reaches the upstream, whatever the upstream does with `Connection: close`. Unread bytes
 * left at an upstream that closes also turn its FIN into a reset that can lose the response.
 */
import { Transform, type TransformCallback } from 'node:stream'
import { advanceBody, type BodyFraming, bodyFramingOf } from './request-body-framing.js'
import type { RequestHead } from './request-head.js'

export class FirstRequestOnly extends Transform {
	#framing: BodyFraming

	constructor(framing: BodyFraming) {
		super()
		this.#framing = framing
	}

	/** Feeds bytes that arrived with the head; returns what of them to forward. */
	admit(bytes: Buffer): Buffer | Error {
		const advance = advanceBody(this.#framing, bytes)
		if (advance.kind === 'invalid') return new Error(advance.reason)
		this.#framing = advance.framing
		return bytes.subarray(0, advance.consumed)
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

/** The body bytes of the first request that arrived with its head, and the stream that passes
 * the rest of that body and nothing after it; an Error when the framing is ambiguous. */
export function firstRequestOf(
	head: RequestHead,
	bytes: Buffer,
): { readonly early: Buffer; readonly rest: FirstRequestOnly } | Error {
	const framing = bodyFramingOf(head)
	if (framing.kind === 'invalid') return new Error(framing.reason)
	const rest = new FirstRequestOnly(framing.framing)
	const early = rest.admit(bytes.subarray(head.length))
	return early instanceof Error ? early : { early, rest }
}
