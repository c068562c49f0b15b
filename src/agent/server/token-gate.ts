/**
 * The per-instance credential check of the README's "Guest agent transports and the per-instance
 * token". `NAMZU_AGENT_BIND_TOKEN` fixes the token; `NAMZU_AGENT_REQUIRE_TOKEN` alone binds the first
 * non-empty token presented for the life of the process (trust on first use); neither ⇒ the gate is
 * open (unix and vsock transports). Tokens are compared as SHA-256 digests with `timingSafeEqual`,
 * so neither the value nor its length leaks through timing. The connection layer decides WHEN to ask
 * (first frame, every op but `healthz`); this module answers whether a token passes, and after a
 * memory restore (`restored`) switches to a new one and closes what the old one opened.
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
	/** Open connections that authenticated, each with how to close it. */
	readonly #authenticated = new Map<object, () => void>()

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

	/**
	 * Remembers an authenticated connection until the returned release runs (on its close), so a
	 * token switch can close it.
	 */
	track(connection: object, close: () => void): () => void {
		this.#authenticated.set(connection, close)
		return () => {
			this.#authenticated.delete(connection)
		}
	}

	/**
	 * From now on only `token` passes. Every tracked connection but `keep` (the one that asked) is
	 * closed: whoever held the old token keeps nothing it opened with it.
	 */
	switchToken(token: string, keep: object): void {
		if (!this.enabled) throw new Error('switchToken on an open gate')
		this.#expected = digest(token)
		for (const [connection, close] of [...this.#authenticated]) {
			if (connection === keep) continue
			this.#authenticated.delete(connection)
			close()
		}
	}
}
