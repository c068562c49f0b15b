import { describe, expect, it } from 'vitest'
import { parseCidr, parseIpAddress } from '../../../src/host/egress/ip-address.js'
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

	it("refuses the host's own addresses, in either spelling", () => {
		const host = [ip('203.0.113.7'), ip('2001:db8::7')]
		expect(deniedRangeOf(ip('203.0.113.7'), host)).toBe('host-address')
		expect(deniedRangeOf(ip('::ffff:203.0.113.7'), host)).toBe('host-address')
		expect(deniedRangeOf(ip('2001:db8:0:0::7'), host)).toBe('host-address')
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
