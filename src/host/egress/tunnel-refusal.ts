/**
 * A tunnel refused at one layer (`EgressLayer`) for a kebab-case reason: what every setup step
 * throws and the proxy reports through `onEgressDecision` before it closes the connection. The
 * bounded wait every setup step uses (resolution, dial, upstream TLS) refuses with one too.
 */
import type { EgressLayer } from './egress-decision.js'

export class TunnelRefusal extends Error {
	constructor(
		readonly layer: EgressLayer,
		readonly reason: string,
		/** The address dialed (or refused), when the tunnel got that far. */
		readonly address?: string,
	) {
		super(reason)
	}
}

/** `error` as a refusal naming `address` (a failure that is not a refusal is a proxy error). */
export function asRefusal(error: unknown, address?: string): TunnelRefusal {
	if (!(error instanceof TunnelRefusal)) return new TunnelRefusal('connect', 'proxy-error', address)
	if (error.address !== undefined || address === undefined) return error
	return new TunnelRefusal(error.layer, error.reason, address)
}

/** Why a connection's setup was cut: its `signal`'s abort reason when that is a kebab-case word
 * (`closed-during-setup` when the client went), `head-timeout` otherwise. */
export function abortedRefusal(signal: AbortSignal, layer: EgressLayer): TunnelRefusal {
	const reason = typeof signal.reason === 'string' ? signal.reason : 'head-timeout'
	return new TunnelRefusal(layer, reason)
}

/** `work`, refused at `layer` for `reason` after `ms`, or as `abortedRefusal` once `signal` aborts. */
export function withTimeout<T>(
	work: Promise<T>,
	ms: number,
	layer: EgressLayer,
	reason: string,
	signal: AbortSignal,
): Promise<T> {
	let timer: NodeJS.Timeout | undefined
	let onAbort: (() => void) | undefined
	return Promise.race([
		work,
		new Promise<never>((_, reject) => {
			timer = setTimeout(() => reject(new TunnelRefusal(layer, reason)), ms)
			onAbort = () => reject(abortedRefusal(signal, layer))
			if (signal.aborted) onAbort()
			else signal.addEventListener('abort', onAbort, { once: true })
		}),
	]).finally(() => {
		clearTimeout(timer)
		if (onAbort) signal.removeEventListener('abort', onAbort)
	})
}
