/**
 * Who may reach the HTTP transport, pure: the bind address (loopback unless the operator said
 * otherwise) and the bearer token (compared in constant time, never logged).
 */
import { timingSafeEqual } from 'node:crypto'
import { McpHttpConfigError } from './mcp-errors.js'

/** A token shorter than this is refused: it would be guessable. */
export const MIN_MCP_TOKEN_LENGTH = 16

export function isLoopbackHost(host: string): boolean {
	const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
	if (bare === 'localhost' || bare === '::1') return true
	return /^127(\.\d{1,3}){3}$/.test(bare)
}

/** Refuses a bind beyond loopback unless `allowRemote`, and a token too short to be a secret. */
export function checkHttpAccess(host: string, allowRemote: boolean, token: string): void {
	if (!isLoopbackHost(host) && !allowRemote) {
		throw new McpHttpConfigError(
			'--host',
			`${host} is not a loopback address; pass --allow-remote to serve other machines`,
		)
	}
	if (token.length < MIN_MCP_TOKEN_LENGTH) {
		throw new McpHttpConfigError(
			'NAMZU_SANDBOX_MCP_TOKEN',
			`must be at least ${MIN_MCP_TOKEN_LENGTH} characters`,
		)
	}
}

/** Whether an `Authorization` header carries exactly `Bearer <token>`. */
export function bearerMatches(header: string | undefined, token: string): boolean {
	if (header === undefined) return false
	const match = /^Bearer (.+)$/.exec(header)
	if (!match?.[1]) return false
	const given = Buffer.from(match[1], 'utf8')
	const expected = Buffer.from(token, 'utf8')
	return given.length === expected.length && timingSafeEqual(given, expected)
}
