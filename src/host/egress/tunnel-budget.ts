/**
 * How many tunnels may be open at once: a count with a ceiling, taken when a connection arrives on
 * a proxy's socket and given back when it closes. Each proxy has its own (one sandbox's share) and
 * every proxy of this process shares the host's, so no set of sandboxes can hold more of the
 * host's file descriptors than the host allows; a connection past either is refused by name.
 */
import { SandboxConfigError } from '../../contract/errors.js'

/** Tunnels one sandbox may hold open at once (each is two descriptors: the guest's and the upstream's). */
export const DEFAULT_MAX_TUNNELS = 256
/** Tunnels every sandbox of this process together may hold open at once. */
export const DEFAULT_HOST_MAX_TUNNELS = 4096

export class TunnelBudget {
	#inUse = 0

	constructor(
		readonly limit: number,
		field = 'tunnel limit',
	) {
		if (!Number.isSafeInteger(limit) || limit < 1) {
			throw new SandboxConfigError(field, 'must be a positive integer', {
				expected: 'a positive integer',
				received: String(limit),
			})
		}
	}

	get inUse(): number {
		return this.#inUse
	}

	/** Takes one tunnel; false when the ceiling is reached. */
	tryTake(): boolean {
		if (this.#inUse >= this.limit) return false
		this.#inUse++
		return true
	}

	release(): void {
		if (this.#inUse > 0) this.#inUse--
	}
}

/** The host's budget: every egress proxy of this process takes from it unless told otherwise. */
export const HOST_TUNNEL_BUDGET = new TunnelBudget(DEFAULT_HOST_MAX_TUNNELS)
