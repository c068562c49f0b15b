/**
 * The one test for "a JSON object" (not null, not an array) that every reader of a parsed frame,
 * reply, document or tool argument starts from. It lives in `common/`, below every area, so the
 * agent, the wire, the contract, the host, the tiers and the tools all share it.
 */
export function isRecord(value: unknown): value is Record<string, unknown> {
	return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** A JSON object whose every value is a string, such as an `env` body. */
export function isStringRecord(value: unknown): value is Record<string, string> {
	return isRecord(value) && Object.values(value).every((entry) => typeof entry === 'string')
}
