/**
 * The per-instance credential check of the README's "Guest agent transports and the per-instance
 * token". `NAMZU_AGENT_BIND_TOKEN` fixes the token; `NAMZU_AGENT_REQUIRE_TOKEN` alone binds the first
 * non-empty token presented for the life of the process (trust on first use); neither ⇒ the gate is
 * open (unix and vsock transports). Tokens are compared as SHA-256 digests with `timingSafeEqual`,
 * so neither the value nor its length leaks through timing. The connection layer decides WHEN to ask
 * (first frame, every op but `healthz`); this module only answers whether a token passes.
 */
import { createHash, timingSafeEqual } from 'node:crypto'

export interface TokenGateOptions {
	readonly bindToken?: string
	readonly requireToken: boolean
}

function digest(token: string): Buffer {
	return createHash('sha256').update(token, 'utf8').digest()
}

export class TokenGate {
	/** Whether any op needs a token at all. */
	readonly enabled: boolean
	#expected: Buffer | undefined

	constructor(options: TokenGateOptions) {
		this.enabled = options.bindToken !== undefined || options.requireToken
		this.#expected = options.bindToken === undefined ? undefined : digest(options.bindToken)
	}

	/** Whether a token has been fixed, by configuration or by first use. */
	get bound(): boolean {
		return this.#expected !== undefined
	}

	/**
	 * True when `token` authenticates. In trust-on-first-use mode the first non-empty string
	 * presented becomes the only token accepted from then on.
	 */
	authenticate(token: unknown): boolean {
		if (!this.enabled) return true
		if (typeof token !== 'string' || token === '') return false
		const presented = digest(token)
		if (this.#expected === undefined) {
			this.#expected = presented
			return true
		}
		return timingSafeEqual(presented, this.#expected)
	}
}
