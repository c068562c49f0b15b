/**
 * Pure timing of the lease (lease-renewal.ts): a renewal every half TTL jittered ±10%, each PATCH
 * bounded by a quarter of that interval (at most 30 s), and after a failure a retry 1 s later,
 * doubling per consecutive failure, capped at the smaller of 30 s and a twentieth of the TTL — so
 * a short outage around a renewal gets several attempts before the object's `shutdownTime`.
 */

export const LEASE_JITTER_FRACTION = 0.1
export const LEASE_RENEWAL_MAX_TIMEOUT_MS = 30_000
export const LEASE_RETRY_INITIAL_MS = 1000
export const LEASE_RETRY_MAX_MS = 30_000

/** The jittered half TTL; `random` in [0, 1). */
export function leaseIntervalMs(ttlSeconds: number, random: number): number {
	const half = (ttlSeconds * 1000) / 2
	return Math.round(half * (1 - LEASE_JITTER_FRACTION + 2 * LEASE_JITTER_FRACTION * random))
}

/** Bound on one renewal PATCH: a quarter of the un-jittered interval, at most 30 s. */
export function leaseRenewalTimeoutMs(ttlSeconds: number): number {
	return Math.min((ttlSeconds * 1000) / 2 / 4, LEASE_RENEWAL_MAX_TIMEOUT_MS)
}

/** Cap of the failure backoff: min(30 s, TTL / 20). */
export function leaseRetryCapMs(ttlSeconds: number): number {
	return Math.min(LEASE_RETRY_MAX_MS, (ttlSeconds * 1000) / 20)
}

/** Delay after the `consecutiveFailures`-th failure in a row (1-based): 1 s, 2 s, 4 s, … capped. */
export function leaseRetryDelayMs(consecutiveFailures: number, ttlSeconds: number): number {
	const exponent = Math.min(Math.max(consecutiveFailures, 1) - 1, 30)
	return Math.min(LEASE_RETRY_INITIAL_MS * 2 ** exponent, leaseRetryCapMs(ttlSeconds))
}

/** When the next attempt comes after an outcome. */
export function nextLeaseDelayMs(
	outcome: { readonly ok: true } | { readonly ok: false; readonly consecutiveFailures: number },
	ttlSeconds: number,
	random: number,
): number {
	return outcome.ok
		? leaseIntervalMs(ttlSeconds, random)
		: leaseRetryDelayMs(outcome.consecutiveFailures, ttlSeconds)
}
