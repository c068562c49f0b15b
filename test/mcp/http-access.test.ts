import { describe, expect, it } from 'vitest'
import { bearerMatches, checkHttpAccess, isLoopbackHost } from '../../src/mcp/http-access.js'
import { McpHttpConfigError } from '../../src/mcp/mcp-errors.js'

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
