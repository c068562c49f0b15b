/**
 * The per-request bound of the Kubernetes API client: its default, its floor, and the check that
 * refuses a value below the floor at construction. There is deliberately no value that switches
 * the bound off — an API server that accepts and never answers must not pin a caller forever.
 */
import { KubernetesApiRequestTimeoutConfigError } from './api-errors.js'

/** The bound every request gets when `apiRequestTimeoutMs` is omitted. */
export const DEFAULT_API_REQUEST_TIMEOUT_MS = 30_000

/** The smallest accepted `apiRequestTimeoutMs`; anything below (0 included) is refused. */
export const MIN_API_REQUEST_TIMEOUT_MS = 1_000

/** The bound to use, or a refusal naming the value; pure. */
export function resolveApiRequestTimeoutMs(value: number | undefined): number {
	if (value === undefined) return DEFAULT_API_REQUEST_TIMEOUT_MS
	if (!Number.isFinite(value) || value < MIN_API_REQUEST_TIMEOUT_MS) {
		throw new KubernetesApiRequestTimeoutConfigError(value)
	}
	return value
}
