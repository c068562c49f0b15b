import { describe, expect, it } from 'vitest'
import { SandboxConfigError } from '../../../src/contract/errors.js'
import {
	capturedPorts,
	MAX_ALLOWED_HOSTS,
	matchAddress,
	matchName,
	nameAllowedOnAnyPort,
	parseAllowedHosts,
} from '../../../src/host/egress/allowed-hosts.js'
import { ip } from './egress-test-kit.js'

describe('allowedHosts grammar', () => {
	it.each([
		['api.example.com', { kind: 'name', name: 'api.example.com' }],
		['API.Example.COM.', { kind: 'name', name: 'api.example.com' }],
		['api.example.com:8443', { kind: 'name', name: 'api.example.com', port: 8443 }],
		['*.example.com', { kind: 'suffix', suffix: 'example.com' }],
		['*.example.com:5432', { kind: 'suffix', suffix: 'example.com', port: 5432 }],
		['_srv.example-1.test', { kind: 'name', name: '_srv.example-1.test' }],
		['203.0.113.7', { kind: 'cidr', block: { family: 4, prefix: 32 } }],
		['203.0.113.0/24:443', { kind: 'cidr', block: { family: 4, prefix: 24 }, port: 443 }],
		['2001:db8::/32', { kind: 'cidr', block: { family: 6, prefix: 32 } }],
		['[2001:db8::1]:443', { kind: 'cidr', block: { family: 6, prefix: 128 }, port: 443 }],
		['::ffff:10.0.0.0/104', { kind: 'cidr', block: { family: 4, prefix: 8 } }],
		['tcp://db.example.com:5432', { kind: 'name', name: 'db.example.com', port: 5432, raw: true }],
		['TCP://*.example.com:22', { kind: 'suffix', suffix: 'example.com', port: 22, raw: true }],
		['tcp://10.0.0.0/8:6379', { kind: 'cidr', block: { prefix: 8 }, port: 6379, raw: true }],
		['tcp://[2001:db8::1]:80', { kind: 'cidr', block: { family: 6 }, port: 80, raw: true }],
	])('accepts %s', (entry, expected) => {
		const [rule] = parseAllowedHosts([entry])
		expect(rule).toMatchObject({ ...expected, entry })
	})

	it.each([
		['', 'is empty'],
		['*', 'is not a host name'],
		['*.', 'suffix'],
		['**.example.com', 'is not a host name'],
		['exa mple.com', 'is not a host name'],
		['-bad.example.com', 'is not a host name'],
		['bad-.example.com', 'is not a host name'],
		['a..b', 'is not a host name'],
		[`${'a'.repeat(64)}.com`, 'is not a host name'],
		['ünïcode.example', 'is not a host name'],
		['example.com:0', 'port'],
		['example.com:65536', 'port'],
		['example.com:08', 'port'],
		['example.com:http', 'port'],
		['10.0.0.1/8', 'host bits'],
		['10.0.0.0/33', 'CIDR'],
		['256.1.1.1', 'CIDR'],
		['1.2.3', 'CIDR'],
		['[2001:db8::1', 'without ]'],
		['[2001:db8::1]x', 'unexpected'],
		['fe80::1%eth0', 'CIDR'],
		['http://example.com', 'scheme other than tcp://'],
		['x'.repeat(301), 'longer than'],
		['tcp://db.example.com', 'names no port'],
		['tcp://10.0.0.0/8', 'names no port'],
		['tcp://', 'is not a host name'],
		['udp://db.example.com:53', 'scheme other than tcp://'],
	])('refuses %j naming its index', (entry, message) => {
		const attempt = () => parseAllowedHosts(['ok.example', entry])
		expect(attempt).toThrow(SandboxConfigError)
		expect(attempt).toThrow(message)
		try {
			attempt()
		} catch (error) {
			expect((error as SandboxConfigError).field).toBe('egress.allowedHosts[1]')
		}
	})

	it('refuses a non-array, a non-string entry and too many entries', () => {
		expect(() => parseAllowedHosts('example.com')).toThrow('egress.allowedHosts: must be an array')
		expect(() => parseAllowedHosts([42])).toThrow('egress.allowedHosts[0]: must be a string')
		const many = Array.from({ length: MAX_ALLOWED_HOSTS + 1 }, (_, i) => `h${i}.example`)
		expect(() => parseAllowedHosts(many)).toThrow(`at most ${MAX_ALLOWED_HOSTS}`)
	})
})

describe('allowedHosts matching', () => {
	const rules = parseAllowedHosts([
		'api.example.com',
		'*.cdn.example:8443',
		'db.example.com:5432',
		'203.0.113.0/24',
		'[2001:db8::/32]:22',
	])

	it.each([
		['api.example.com', 443, 'api.example.com'],
		['api.example.com', 80, 'api.example.com'],
		['api.example.com', 8080, undefined],
		['x.api.example.com', 443, undefined],
		['a.cdn.example', 8443, '*.cdn.example:8443'],
		['a.b.cdn.example', 8443, '*.cdn.example:8443'],
		['cdn.example', 8443, undefined],
		['evilcdn.example', 8443, undefined],
		['a.cdn.example', 443, undefined],
		['db.example.com', 5432, 'db.example.com:5432'],
		['db.example.com', 443, undefined],
	])('name %s:%i → %s', (name, port, entry) => {
		expect(matchName(rules, name, port)?.entry).toBe(entry)
	})

	it.each([
		['203.0.113.9', 443, '203.0.113.0/24'],
		['203.0.114.9', 443, undefined],
		['::ffff:203.0.113.9', 80, '203.0.113.0/24'],
		['2001:db8::5', 22, '[2001:db8::/32]:22'],
		['2001:db8::5', 443, undefined],
	])('address %s:%i → %s', (address, port, entry) => {
		expect(matchAddress(rules, ip(address), port)?.entry).toBe(entry)
	})

	it('names the DNS stub may answer, and the ports the helper captures', () => {
		expect(nameAllowedOnAnyPort(rules, 'db.example.com')).toBe(true)
		expect(nameAllowedOnAnyPort(rules, 'x.cdn.example')).toBe(true)
		expect(nameAllowedOnAnyPort(rules, 'other.example')).toBe(false)
		expect(capturedPorts(rules)).toEqual([22, 80, 443, 5432, 8443])
		expect(capturedPorts([])).toEqual([80, 443])
	})
})
