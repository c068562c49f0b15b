import { describe, expect, it } from 'vitest'
import { SandboxConfigError } from '../../../src/contract/errors.js'
import { parseAllowedHosts } from '../../../src/host/egress/allowed-hosts.js'
import type { BridgeTarget } from '../../../src/host/egress/bridge-request.js'
import {
	credentialHeadersFor,
	parseEgressCredentials,
} from '../../../src/host/egress/egress-credentials.js'
import {
	chooseAddress,
	decideConnect,
	decideResolve,
	decideServerName,
} from '../../../src/host/egress/egress-decision.js'
import { ip } from './egress-test-kit.js'

/** `name:x` or `ip:1.2.3.4`: readable test titles, targets built inside. */
function target(spec: string): BridgeTarget {
	const [kind, value = ''] = spec.split(/:(.*)/)
	return kind === 'ip'
		? { kind: 'address', address: ip(value), text: value }
		: { kind: 'name', name: value }
}

const rules = parseAllowedHosts([
	'api.example.test',
	'*.cdn.test',
	'203.0.113.0/24',
	'10.9.0.0/16:5432',
])

describe('egress decisions', () => {
	it.each([
		['api.example.test', true],
		['x.cdn.test', true],
		['cdn.test', false],
		['evil.test', false],
	])('DNS for %s: %s', (host, allowed) => {
		expect(decideResolve(rules, host).allowed).toBe(allowed)
	})

	it.each<[string, number, string | undefined]>([
		['name:api.example.test', 443, 'api.example.test'],
		['name:api.example.test', 22, undefined],
		['name:evil.test', 443, undefined],
		['ip:203.0.113.5', 443, '203.0.113.0/24'],
		['ip:198.51.100.5', 443, undefined],
		['ip:127.0.0.1', 443, undefined],
		['ip:10.9.1.1', 5432, '10.9.0.0/16:5432'],
	])('CONNECT %s port %i → %s', (spec, port, rule) => {
		const verdict = decideConnect(rules, target(spec), port)
		expect(verdict.allowed ? verdict.rule?.entry : undefined).toBe(rule)
	})

	it('a raw (tcp://) rule decides a tunnel another rule also allows: its bytes pass unread', () => {
		const both = parseAllowedHosts(['*.example.test:5432', 'tcp://db.example.test:5432'])
		expect(decideConnect(both, target('name:db.example.test'), 5432)).toMatchObject({
			allowed: true,
			rule: { entry: 'tcp://db.example.test:5432', raw: true },
		})
		expect(decideConnect(both, target('name:web.example.test'), 5432)).toMatchObject({
			allowed: true,
			rule: { entry: '*.example.test:5432' },
		})
		const verdict = decideConnect(both, target('name:web.example.test'), 5432)
		expect(verdict.allowed && verdict.rule?.raw).toBeFalsy()
		expect(decideConnect(both, target('name:db.example.test'), 443).allowed).toBe(false)
	})

	it('dials a public address, a private one only when a CIDR rule names it', () => {
		expect(chooseAddress(rules, [], [ip('93.184.216.34')], 443)).toMatchObject({ allowed: true })
		expect(chooseAddress(rules, [], [ip('10.0.0.5')], 443)).toEqual({
			allowed: false,
			reason: 'private-range:private',
			address: ip('10.0.0.5'),
		})
		expect(chooseAddress(rules, [], [ip('127.0.0.1'), ip('93.184.216.34')], 443)).toMatchObject({
			allowed: true,
			address: ip('93.184.216.34'),
		})
		expect(chooseAddress(rules, [], [ip('10.9.3.3')], 5432)).toMatchObject({
			allowed: true,
			rule: { entry: '10.9.0.0/16:5432' },
		})
		expect(chooseAddress(rules, [], [ip('10.9.3.3')], 443)).toMatchObject({ allowed: false })
		expect(chooseAddress(rules, [ip('203.0.113.7')], [ip('203.0.113.7')], 443)).toMatchObject({
			allowed: true,
		})
		expect(chooseAddress(rules, [ip('93.184.216.34')], [ip('93.184.216.34')], 443)).toMatchObject({
			reason: 'private-range:host-address',
		})
		expect(chooseAddress(rules, [], [], 443)).toEqual({ allowed: false, reason: 'unresolved' })
		expect(chooseAddress(rules, [], [ip('169.254.169.254')], 80)).toMatchObject({
			reason: 'private-range:link-local',
		})
	})

	it.each<[string, string | undefined, boolean | string]>([
		['name:api.example.test', 'api.example.test', true],
		['name:api.example.test', 'API.example.test.', true],
		['name:api.example.test', 'evil.test', 'sni-mismatch'],
		['name:api.example.test', undefined, 'sni-absent'],
		['ip:203.0.113.5', 'anything.test', true],
		['ip:203.0.113.5', undefined, true],
	])('server name on %s: %s → %s', (spec, sent, expected) => {
		const verdict = decideServerName(target(spec), sent)
		expect(verdict.allowed ? true : verdict.reason).toBe(expected)
	})
})

describe('egress credentials', () => {
	it('normalizes hosts and finds the headers for exactly that host', () => {
		const credentials = parseEgressCredentials([
			{ host: 'API.example.test', headers: { Authorization: 'Bearer s3cret' } },
		])
		expect(credentialHeadersFor(credentials, 'api.example.test')).toEqual({
			Authorization: 'Bearer s3cret',
		})
		expect(credentialHeadersFor(credentials, 'x.api.example.test')).toBeUndefined()
	})

	it.each<[unknown, string]>([
		['x', 'egressCredentials: must be an array'],
		[[null], 'egressCredentials[0]: must be an object'],
		[[{ host: '*.a.test', headers: { A: 'b' } }], 'egressCredentials[0].host'],
		[[{ host: 'a.test', headers: {} }], 'egressCredentials[0].headers'],
		[[{ host: 'a.test', headers: { 'Bad Name': 'x' } }], 'cannot be set'],
		[[{ host: 'a.test', headers: { Host: 'x' } }], 'cannot be set'],
		[
			[
				{ host: 'a.test', headers: { A: 'b' } },
				{ host: 'A.test', headers: { A: 'c' } },
			],
			'listed twice',
		],
	])('refuses %j', (value, message) => {
		expect(() => parseEgressCredentials(value)).toThrow(message)
	})

	it('never echoes a refused value', () => {
		const secret = 'Bearer line\r\nbreak-s3cret'
		try {
			parseEgressCredentials([{ host: 'a.test', headers: { Authorization: secret } }])
			expect.unreachable()
		} catch (error) {
			expect(error).toBeInstanceOf(SandboxConfigError)
			expect(String((error as Error).message)).not.toContain('s3cret')
			expect((error as SandboxConfigError).field).toBe('egressCredentials[0].headers.Authorization')
		}
	})
})
