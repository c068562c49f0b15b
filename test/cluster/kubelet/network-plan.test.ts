import { describe, expect, it } from 'vitest'
import {
	cidrRange,
	cidrsOverlap,
	ipv4ToNumber,
	lowestFreeHost,
	podAddress,
	podMacAddress,
	podNetnsName,
	podVethName,
	routeIsOnBridge,
	SLOT_COUNT,
	slotCollides,
	slotPlan,
} from './network-plan.js'

describe('harness network plan', () => {
	it('gives each slot its own bridge, /24 and name prefix, within 15-character interface names', () => {
		expect(slotPlan(0)).toEqual({
			slot: 0,
			bridge: 'nzkbr0',
			subnet: '10.244.80.0/24',
			gateway: '10.244.80.1',
			prefix: '10.244.80',
			namePrefix: 'nzk0',
		})
		const last = slotPlan(SLOT_COUNT - 1)
		expect(last.subnet).toBe('10.244.95.0/24')
		expect(podVethName(last, 254).length).toBeLessThanOrEqual(15)
		expect(podNetnsName(last, 254)).toBe('nzk15-p254')
		expect(podAddress(last, 2)).toBe('10.244.95.2')
		expect(() => slotPlan(SLOT_COUNT)).toThrow(RangeError)
	})

	it('fixes each pod address’s MAC by slot and host: locally administered, unicast, distinct', () => {
		expect(podMacAddress(slotPlan(0), 2)).toBe('02:6e:7a:00:00:02')
		expect(podMacAddress(slotPlan(15), 254)).toBe('02:6e:7a:00:0f:fe')
		const all = new Set<string>()
		for (let slot = 0; slot < SLOT_COUNT; slot++) {
			for (let host = 2; host <= 254; host++) all.add(podMacAddress(slotPlan(slot), host))
		}
		expect(all.size).toBe(SLOT_COUNT * 253)
		expect([...all].every((mac) => /^02(:[0-9a-f]{2}){5}$/.test(mac))).toBe(true)
	})

	it.each<[number[], number | undefined]>([
		[[], 2],
		[[2, 3], 4],
		[[3], 2],
		[Array.from({ length: 253 }, (_, i) => i + 2), undefined],
	])('allocates the lowest free pod host number (used %j → %j)', (used, expected) => {
		expect(lowestFreeHost(new Set(used))).toBe(expected)
	})

	it.each<[string, number | undefined]>([
		['10.244.80.1', (10 << 24) + (244 << 16) + (80 << 8) + 1],
		['256.1.1.1', undefined],
		['1.2.3', undefined],
		['a.b.c.d', undefined],
	])('parses %s', (address, expected) => {
		expect(ipv4ToNumber(address)).toBe(expected)
	})

	it.each<[string, string, boolean]>([
		['10.244.80.0/24', '10.244.80.7', true],
		['10.244.80.0/24', '10.244.81.0/24', false],
		['10.0.0.0/8', '10.244.80.0/24', true],
		['10.244.80.128/25', '10.244.80.0/24', true],
		['192.0.2.0/24', '10.244.80.0/24', false],
	])('%s overlaps %s: %s', (a, b, expected) => {
		expect(cidrsOverlap(a, b)).toBe(expected)
	})

	it('normalises a CIDR to its network range', () => {
		expect(cidrRange('10.244.80.9/24')).toEqual([
			ipv4ToNumber('10.244.80.0'),
			ipv4ToNumber('10.244.80.255'),
		])
	})

	it('skips a slot whose /24 any existing route overlaps, except the default route and its own stale bridge', () => {
		const plan = slotPlan(0)
		expect(
			slotCollides(plan, [
				{ dst: 'default', gateway: '192.0.2.1' },
				{ dst: '192.0.2.0/24', dev: 'eth0' },
			]),
		).toBe(false)
		expect(slotCollides(plan, [{ dst: '10.244.80.0/24', dev: 'nzkbr0' }])).toBe(false)
		expect(slotCollides(plan, [{ dst: '10.244.0.0/16', dev: 'cni0' }])).toBe(true)
		expect(slotCollides(plan, [{ dst: '10.244.80.5', dev: 'tun0' }])).toBe(true)
	})

	it.each<[string, object, boolean]>([
		['10.244.80.2', { dst: '10.244.80.2', dev: 'nzkbr0' }, true],
		['10.244.80.2', { dst: '10.244.80.2', dev: 'eth0', gateway: '192.0.2.1' }, false],
		['10.244.80.2', { dst: '10.244.80.2', dev: 'nzkbr0', gateway: '10.244.80.1' }, false],
		['10.244.81.2', { dst: '10.244.81.2', dev: 'nzkbr0' }, false],
		['10.244.80.2', {}, false],
	])('the dial check for %s with route %j passes: %s', (address, lookup, expected) => {
		expect(routeIsOnBridge(slotPlan(0), address, lookup)).toBe(expected)
	})
})
