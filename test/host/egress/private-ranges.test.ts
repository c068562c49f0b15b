import { describe, expect, it } from 'vitest'
import {
	embeddedIpv4Of,
	ipAddressText,
	parseCidr,
	parseIpAddress,
} from '../../../src/host/egress/ip-address.js'
import { deniedRangeOf } from '../../../src/host/egress/private-ranges.js'
import { ip } from './egress-test-kit.js'

describe('private-range deny set', () => {
	it.each([
		['127.0.0.1', 'loopback'],
		['127.255.0.9', 'loopback'],
		['10.1.2.3', 'private'],
		['172.16.0.1', 'private'],
		['172.31.255.255', 'private'],
		['192.168.1.1', 'private'],
		['169.254.169.254', 'link-local'],
		['100.64.0.1', 'shared-address-space'],
		['100.127.255.255', 'shared-address-space'],
		['0.0.0.0', 'this-network'],
		['198.18.0.7', 'benchmarking'],
		['224.0.0.1', 'multicast'],
		['255.255.255.255', 'reserved'],
		['::1', 'loopback'],
		['::', 'unspecified'],
		['::ffff:127.0.0.1', 'loopback'],
		['::ffff:169.254.169.254', 'link-local'],
		['fd00::1', 'unique-local'],
		['fc00::1', 'unique-local'],
		['fe80::1', 'link-local'],
		['ff02::1', 'multicast'],
	])('%s is %s', (address, range) => {
		expect(deniedRangeOf(ip(address), [])).toBe(range)
	})

	it.each([
		'93.184.216.34',
		'203.0.113.7',
		'172.32.0.1',
		'100.128.0.1',
		'2606:4700::1111',
		'1.1.1.1',
	])('%s is public', (address) => {
		expect(deniedRangeOf(ip(address), [])).toBeUndefined()
	})

	// Each IPv6 form that carries an IPv4 address is judged by that address: an attack on an
	// internal one through a translator, and a public one beside it (the positive control).
	it.each([
		['64:ff9b::127.0.0.1', 'nat64:loopback'],
		['64:ff9b::a9fe:a9fe', 'nat64:link-local'],
		['64:ff9b::10.0.0.1', 'nat64:private'],
		['64:ff9b::192.168.1.1', 'nat64:private'],
		['64:ff9b:1::1', 'nat64-local'],
		['64:ff9b:1:a00:1::', 'nat64-local'],
		['::127.0.0.1', 'ipv4-compatible:loopback'],
		['::169.254.169.254', 'ipv4-compatible:link-local'],
		['::ffff:0:10.1.2.3', 'ipv4-translated:private'],
		['::ffff:0:a9fe:a9fe', 'ipv4-translated:link-local'],
		['2002:7f00:1::', '6to4:loopback'],
		['2002:a9fe:a9fe::1', '6to4:link-local'],
		['2002:c0a8:101:1::1', '6to4:private'],
		// Teredo: the server is 10.0.0.1 here; the client, inverted, is a public address.
		['2001:0:a00:1:0:0:f7f7:f7f7', 'teredo-server:private'],
		// The client 127.0.0.1, inverted in the last 32 bits (~0x7f000001 = 0x80fffffe).
		['2001:0:4136:e378:8000:63bf:80ff:fffe', 'teredo-client:loopback'],
		['2001:0:4136:e378:8000:63bf:5601:5601', 'teredo-client:link-local'],
		['2001:db8:1:2:0:5efe:10.0.0.9', 'isatap:private'],
		['2001:db8:1:2:200:5efe:127.0.0.1', 'isatap:loopback'],
	])('%s carries a denied IPv4 address: %s', (address, range) => {
		expect(deniedRangeOf(ip(address), [])).toBe(range)
	})

	it.each([
		'64:ff9b::8.8.8.8',
		'::8.8.4.4',
		'::ffff:0:1.1.1.1',
		'2002:808:808::1',
		'2001:0:4136:e378:8000:63bf:3fff:fdd2',
		'2001:db8:1:2:0:5efe:93.184.216.34',
	])('%s carries a public IPv4 address and is not denied', (address) => {
		expect(deniedRangeOf(ip(address), [])).toBeUndefined()
	})

	it('decodes each form to the IPv4 address it carries, once', () => {
		const decoded = (text: string) =>
			embeddedIpv4Of(ip(text)).map((e) => `${e.form} ${ipAddressText(e.address)}`)
		expect(decoded('64:ff9b::7f00:1')).toEqual(['nat64 127.0.0.1'])
		expect(decoded('2002:c000:204::')).toEqual(['6to4 192.0.2.4'])
		expect(decoded('2001:0:4136:e378:8000:63bf:3fff:fdd2')).toEqual([
			'teredo-server 65.54.227.120',
			'teredo-client 192.0.2.45',
		])
		expect(decoded('::ffff:0:1.2.3.4')).toEqual(['ipv4-translated 1.2.3.4'])
		expect(decoded('2606:4700::1111')).toEqual([])
		expect(decoded('10.0.0.1')).toEqual([])
		// The mapped form is folded at parse: it is the IPv4 address itself.
		expect(ip('::ffff:10.0.0.1')).toEqual(ip('10.0.0.1'))
	})

	it("refuses the host's own addresses, in either spelling", () => {
		const host = [ip('203.0.113.7'), ip('2001:db8::7')]
		expect(deniedRangeOf(ip('203.0.113.7'), host)).toBe('host-address')
		expect(deniedRangeOf(ip('::ffff:203.0.113.7'), host)).toBe('host-address')
		expect(deniedRangeOf(ip('2001:db8:0:0::7'), host)).toBe('host-address')
		expect(deniedRangeOf(ip('64:ff9b::203.0.113.7'), host)).toBe('nat64:host-address')
		expect(deniedRangeOf(ip('203.0.113.8'), host)).toBeUndefined()
	})
})

describe('IP literals and blocks', () => {
	it.each([
		['1.2.3.4', true],
		['01.2.3.4', false],
		['1.2.3.4.5', false],
		['::', true],
		['2001:db8::1:2:3:4:5', true],
		['2001:db8:::1', false],
		['::ffff:1.2.3.4', true],
		['1:2:3:4:5:6:7:8:9', false],
		['example.com', false],
		['fe80::1%lo', false],
	])('%s parses: %s', (text, ok) => {
		expect(parseIpAddress(text) !== undefined).toBe(ok)
	})

	it('a block needs zero host bits and a prefix in range', () => {
		expect(parseCidr('10.0.0.0/8')).toMatchObject({ family: 4, prefix: 8 })
		expect(parseCidr('10.0.0.1/8')).toBeUndefined()
		expect(parseCidr('10.0.0.0/-1')).toBeUndefined()
		expect(parseCidr('2001:db8::/129')).toBeUndefined()
		expect(parseCidr('::/0')).toMatchObject({ family: 6, prefix: 0 })
	})
})
