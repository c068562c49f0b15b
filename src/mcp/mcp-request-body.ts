/**
 * Request bodies of the HTTP transport, bounded twice as they arrive: one body may not pass its
 * own ceiling (413), and all bodies being read at once may not pass the server's (503, retry
 * later) — so many clients uploading at once cannot grow the server past a known size. A body's
 * bytes count from its first chunk until it is parsed.
 */
import type { IncomingMessage } from 'node:http'

/** The largest request body accepted (a `write_file` of 16 MiB, JSON-escaped, fits). */
export const MAX_MCP_REQUEST_BYTES = 64 * 1024 * 1024
/** What every request body being read at once may hold together. */
export const MAX_MCP_BODY_BYTES_IN_FLIGHT = 128 * 1024 * 1024

/** Why a body was refused, and the status it is answered with. */
export class BodyRefusal extends Error {
	override readonly name = 'BodyRefusal'
	readonly status: 400 | 413 | 503

	constructor(status: 400 | 413 | 503, message: string) {
		super(message)
		this.status = status
	}
}

/** The bytes of every body being read right now, against one ceiling. */
export class BodyBudget {
	readonly limitBytes: number
	#held = 0
	readonly #onChange: ((heldBytes: number) => void) | undefined

	constructor(limitBytes: number, onChange?: (heldBytes: number) => void) {
		this.limitBytes = limitBytes
		this.#onChange = onChange
	}

	get heldBytes(): number {
		return this.#held
	}

	/** Takes `bytes`, or answers false (taking nothing) when they do not fit. */
	take(bytes: number): boolean {
		if (this.#held + bytes > this.limitBytes) return false
		this.#held += bytes
		this.#onChange?.(this.#held)
		return true
	}

	give(bytes: number): void {
		this.#held -= bytes
		this.#onChange?.(this.#held)
	}
}

/**
 * The request's JSON body (undefined when empty), read under both bounds. A refused body stops
 * being read (the rest is never buffered) and the request is left open for the refusal, which the
 * caller sends with `connection: close`.
 */
export function readBoundedBody(
	req: IncomingMessage,
	maxBytes: number,
	budget: BodyBudget,
): Promise<unknown> {
	const parts: Buffer[] = []
	let total = 0
	return new Promise<unknown>((resolve, reject) => {
		const finish = (settle: () => void) => {
			req.off('data', onData)
			req.off('end', onEnd)
			req.off('error', onError)
			budget.give(total)
			settle()
		}
		const refuse = (refusal: BodyRefusal) => {
			req.pause()
			finish(() => reject(refusal))
		}
		const onData = (chunk: Buffer) => {
			if (total + chunk.length > maxBytes) {
				return refuse(new BodyRefusal(413, `the request body is larger than ${maxBytes} bytes`))
			}
			if (!budget.take(chunk.length)) {
				return refuse(
					new BodyRefusal(
						503,
						`the server is reading ${budget.limitBytes} bytes of request bodies already; retry shortly`,
					),
				)
			}
			total += chunk.length
			parts.push(chunk)
		}
		const onEnd = () => {
			const bytes = Buffer.concat(parts, total)
			finish(() => {
				if (bytes.length === 0) return resolve(undefined)
				try {
					resolve(JSON.parse(bytes.toString('utf8')))
				} catch {
					reject(new BodyRefusal(400, 'the request body is not JSON'))
				}
			})
		}
		const onError = (error: Error) => finish(() => reject(error))
		req.on('data', onData)
		req.once('end', onEnd)
		req.once('error', onError)
	})
}
