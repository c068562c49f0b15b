/**
 * Credentials the proxy adds to requests for one host, outside the sandbox: the guest never holds
 * them. `host` is an exact DNS name (no wildcard: a credential goes where it is named and nowhere
 * else); `headers` are set on every request to it, replacing any the guest sent under those names.
 * Plain HTTP is rewritten as it passes; HTTPS is terminated with the sandbox's own CA for these
 * hosts only, after the upstream's certificate was verified.
 */
import { isRecord } from '../../common/is-record.js'
import { SandboxConfigError } from '../../contract/errors.js'
import { normalizeHostname } from '../../wire/egress-bridge.js'

/** Headers the egress proxy sets on every request to one host (`egressCredentials`). */
export interface EgressCredential {
	/** Exact DNS name the headers are for. */
	readonly host: string
	/** Header fields set on each request to `host` (a value is never shown in an error or a log). */
	readonly headers: Readonly<Record<string, string>>
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
const VALUE = /^[\t\x20-\x7e\x80-\xff]*$/
/** Fields the proxy itself owns on a rewritten request. */
const RESERVED = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'upgrade'])
export const MAX_EGRESS_CREDENTIALS = 256

/** The credentials of a config, normalized; refuses a malformed entry by index, never its value. */
export function parseEgressCredentials(
	value: unknown,
	field = 'egressCredentials',
): EgressCredential[] {
	if (value === undefined) return []
	if (!Array.isArray(value)) {
		throw new SandboxConfigError(field, 'must be an array of { host, headers }')
	}
	if (value.length > MAX_EGRESS_CREDENTIALS) {
		throw new SandboxConfigError(field, `has more than ${MAX_EGRESS_CREDENTIALS} entries`)
	}
	const hosts = new Set<string>()
	return value.map((entry: unknown, index) => {
		const at = `${field}[${index}]`
		if (!isRecord(entry)) throw new SandboxConfigError(at, 'must be an object { host, headers }')
		const host = typeof entry.host === 'string' ? normalizeHostname(entry.host) : undefined
		if (host === undefined) throw new SandboxConfigError(`${at}.host`, 'must be a DNS name')
		if (hosts.has(host)) throw new SandboxConfigError(`${at}.host`, `${host} is listed twice`)
		hosts.add(host)
		if (!isRecord(entry.headers) || Object.keys(entry.headers).length === 0) {
			throw new SandboxConfigError(`${at}.headers`, 'must be a non-empty object of strings')
		}
		const headers: Record<string, string> = {}
		for (const [name, headerValue] of Object.entries(entry.headers)) {
			if (!TOKEN.test(name) || RESERVED.has(name.toLowerCase())) {
				throw new SandboxConfigError(`${at}.headers`, `${JSON.stringify(name)} cannot be set`)
			}
			if (typeof headerValue !== 'string' || !VALUE.test(headerValue)) {
				// Never echo the value: it is a secret.
				throw new SandboxConfigError(
					`${at}.headers.${name}`,
					'must be a string without line breaks or control characters',
				)
			}
			headers[name] = headerValue
		}
		return { host, headers }
	})
}

/** The headers for `name` (normalized), if it has credentials. */
export function credentialHeadersFor(
	credentials: readonly EgressCredential[],
	name: string,
): Readonly<Record<string, string>> | undefined {
	return credentials.find((credential) => credential.host === name)?.headers
}
