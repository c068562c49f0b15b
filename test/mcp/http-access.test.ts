import { describe, expect, it } from 'vitest'
import { bearerMatches, checkHttpAccess, isLoopbackHost } from '../../src/mcp/http-access.js'
import { McpHttpConfigError } from '../../src/mcp/mcp-errors.js'
import { evictionCandidate } from '../../src/mcp/mcp-http-sessions.js'

const TOKEN = 'a-token-of-enough-length'

describe('MCP HTTP access', () => {
	it.each([
		['127.0.0.1', true],
		['127.1.2.3', true],
		['::1', true],
		['[::1]', true],
		['localhost', true],
		['0.0.0.0', false],
		['::', false],
		['192.168.1.5', false],
		['example.com', false],
		['127.0.0.1.example.com', false],
	])('isLoopbackHost(%s) is %s', (host, expected) => {
		expect(isLoopbackHost(host)).toBe(expected)
	})

	it('refuses a non-loopback bind without --allow-remote, and allows it with', () => {
		expect(() => checkHttpAccess('0.0.0.0', false, TOKEN)).toThrow(McpHttpConfigError)
		expect(() => checkHttpAccess('0.0.0.0', true, TOKEN)).not.toThrow()
		expect(() => checkHttpAccess('127.0.0.1', false, TOKEN)).not.toThrow()
	})

	it('refuses a short token without echoing it', () => {
		let caught: unknown
		try {
			checkHttpAccess('127.0.0.1', false, 'short-secret')
		} catch (error) {
			caught = error
		}
		expect(caught).toBeInstanceOf(McpHttpConfigError)
		expect(String((caught as Error).message)).not.toContain('short-secret')
	})

	it.each([
		[`Bearer ${TOKEN}`, true],
		[undefined, false],
		['', false],
		[TOKEN, false],
		[`bearer ${TOKEN}`, false],
		[`Bearer ${TOKEN}x`, false],
		[`Bearer ${TOKEN.slice(1)}`, false],
		['Basic dXNlcjpwYXNz', false],
	])('bearerMatches(%s) is %s', (header, expected) => {
		expect(bearerMatches(header, TOKEN)).toBe(expected)
	})
})

describe('which session a new client may replace', () => {
	const at = (inFlight: number, lastUsedMs: number) => ({ inFlight, lastUsedMs })
	it.each([
		['none when every session is busy', [at(1, 0), at(2, 0)], 0, undefined],
		[
			'none when every session was used within the window',
			[at(0, 950), at(0, 990)],
			100,
			undefined,
		],
		['the least recently used idle one', [at(0, 300), at(0, 100), at(0, 200)], 0, 1],
		['never a busy one, however old', [at(1, 0), at(0, 500)], 0, 1],
		['an idle one just past the window', [at(0, 900), at(0, 950)], 100, 0],
	])('%s', (_title, sessions, idleMs, expected) => {
		const map = new Map(sessions.map((session, index) => [index, session]))
		expect(evictionCandidate(map, 1000, idleMs)).toBe(expected)
	})
})
