/**
 * `Retry-After` as milliseconds, for every HTTP API client here (Kubernetes, ARM): delta-seconds or
 * an HTTP date (relative to `nowMs`), falling back to a body's own seconds field (Kubernetes'
 * `details.retryAfterSeconds`). Pure; an unparseable value is no hint at all.
 */

/** Milliseconds to wait, or undefined when neither source says anything usable. */
export function parseRetryAfterMs(
	header: string | undefined,
	statusRetryAfterSeconds: unknown,
	nowMs: number,
): number | undefined {
	const fromHeader = header === undefined ? undefined : parseHeader(header.trim(), nowMs)
	if (fromHeader !== undefined) return fromHeader
	if (
		typeof statusRetryAfterSeconds === 'number' &&
		Number.isFinite(statusRetryAfterSeconds) &&
		statusRetryAfterSeconds >= 0
	) {
		return Math.round(statusRetryAfterSeconds * 1000)
	}
	return undefined
}

function parseHeader(value: string, nowMs: number): number | undefined {
	if (/^\d+$/.test(value)) return Number(value) * 1000
	if (value === '' || /^[-+\d.]+$/.test(value)) return undefined
	const at = Date.parse(value)
	if (Number.isNaN(at)) return undefined
	return Math.max(0, at - nowMs)
}
