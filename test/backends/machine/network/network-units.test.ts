import { describe, expect, it } from 'vitest'
import {
	assertNetworkUsable,
	DEFAULT_NETWORK_TOOLS,
	loopbackReady,
	missingNetworkTools,
} from '../../../../src/backends/machine/network/egress-network.js'
import {
	hostAddressesFrom,
	SLIRP_DNS,
	sandboxGuardRuleset,
} from '../../../../src/backends/machine/network/host-address-guard.js'
import { LocalNetworkUnavailableError } from '../../../../src/backends/machine/network/network-errors.js'
import {
	firewallCommand,
	slirpArguments,
	slirpCommand,
} from '../../../../src/backends/machine/network/slirp-network.js'

describe('hostAddressesFrom', () => {
	it('splits families, drops scope ids, lower-cases v6 and deduplicates', () => {
		expect(
			hostAddressesFrom([
				'127.0.0.1',
				'::1',
				'192.0.2.2',
				'FD00::2',
				'fe80::fc:ff:fe00:1%eth0',
				'192.0.2.2',
				'not-an-address',
			]),
		).toEqual({ v4: ['127.0.0.1', '192.0.2.2'], v6: ['::1', 'fd00::2', 'fe80::fc:ff:fe00:1'] })
	})
})

describe('sandboxGuardRuleset', () => {
	const ruleset = sandboxGuardRuleset({
		v4: ['127.0.0.1', '192.0.2.2', '169.254.3.4', '10.0.2.2'],
		v6: ['::1', 'fd00::2', 'fe80::1'],
	})

	it('accepts loopback first: the sandbox’s own services stay reachable', () => {
		const lines = ruleset.split('\n').map((line) => line.trim())
		const loopback = lines.indexOf('oifname "lo" accept')
		expect(loopback).toBeGreaterThan(-1)
		expect(lines.findIndex((line) => line.includes('jump refuse'))).toBeGreaterThan(loopback)
	})

	it('refuses every host address, the gateway alias and link-local, in one set per family', () => {
		expect(ruleset).toContain(
			'ip daddr { 10.0.2.2, 169.254.0.0/16, 0.0.0.0/8, 127.0.0.1, 192.0.2.2 } jump refuse',
		)
		expect(ruleset).toContain('ip6 daddr { fe80::/10, ::1, fd00::2 } jump refuse')
	})

	it('leaves out host addresses a refused prefix covers (nft refuses overlapping set elements)', () => {
		expect(ruleset).not.toContain('169.254.3.4')
		expect(ruleset).not.toContain('fe80::1,')
		expect(ruleset.match(/10\.0\.2\.2/g)).toHaveLength(1)
	})

	it('lets DNS reach only slirp’s forwarder port and refuses the forwarder otherwise', () => {
		expect(ruleset).toContain(`ip daddr ${SLIRP_DNS} udp dport 53 accept`)
		expect(ruleset).toContain(`ip daddr ${SLIRP_DNS} tcp dport 53 accept`)
		expect(ruleset).toContain(`ip daddr ${SLIRP_DNS} jump refuse`)
	})

	it('refuses IPv6 beyond loopback and rejects (RST for TCP, admin-prohibited otherwise)', () => {
		expect(ruleset).toContain('meta nfproto ipv6 jump refuse')
		expect(ruleset).toContain('meta l4proto tcp reject with tcp reset')
		expect(ruleset).toContain('reject with icmpx type admin-prohibited')
		expect(ruleset).not.toContain('drop')
	})
})

describe('allow-all plumbing', () => {
	it.each([
		['00000000000000000000000000000001 01 80 10 80       lo\n', undefined, true],
		['', undefined, false],
		['fe800000000000000000000000000001 02 40 20 80     tap0\n', undefined, false],
		[undefined, 'Local:\n  +-- 127.0.0.0/8 2 0 2\n     |-- 127.0.0.1\n', true],
		[undefined, 'Local:\n', false],
	])('loopback ready from if_inet6 %j / fib_trie %j ⇒ %s', (ifInet6, fibTrie, ready) => {
		expect(loopbackReady(ifInet6, fibTrie)).toBe(ready)
	})

	it('runs slirp4netns sandboxed, host loopback disabled, tied to the sandbox by --exit-fd', () => {
		expect(slirpArguments(42)).toEqual([
			'--configure',
			'--mtu=65520',
			'--disable-host-loopback',
			'--enable-sandbox',
			'--enable-seccomp',
			'--exit-fd=3',
			'--ready-fd=4',
			'42',
			'tap0',
		])
	})

	it('starts slirp4netns in a private mount namespace of its own as root, and directly otherwise', () => {
		const slirp = ['/usr/bin/slirp4netns', ...slirpArguments(42)]
		expect(slirpCommand('/usr/bin/slirp4netns', 42, true)).toEqual([
			'/usr/bin/unshare',
			'--mount',
			'--propagation',
			'private',
			'--',
			...slirp,
		])
		expect(slirpCommand('/usr/bin/slirp4netns', 42, false)).toEqual(slirp)
	})

	it('enters only the network namespace as root, and the user namespace too otherwise', () => {
		expect(firewallCommand(DEFAULT_NETWORK_TOOLS, 42, true)).toEqual([
			'/usr/bin/nsenter',
			'--net=/proc/42/ns/net',
			'--',
			'/usr/sbin/nft',
			'-f',
			'-',
		])
		expect(firewallCommand(DEFAULT_NETWORK_TOOLS, 42, false)).toEqual([
			'/usr/bin/nsenter',
			'--user=/proc/42/ns/user',
			'--net=/proc/42/ns/net',
			'--preserve-credentials',
			'--',
			'/usr/sbin/nft',
			'-f',
			'-',
		])
	})
})

describe('network tool checks', () => {
	const missing = { ...DEFAULT_NETWORK_TOOLS, slirp4netns: '/nonexistent/slirp4netns' }

	it('name each missing tool with what to install', async () => {
		const found = await missingNetworkTools(
			{ ...missing, nft: '/nonexistent/nft', nsenter: '/nonexistent/nsenter' },
			true,
		)
		expect(found.map((entry) => entry.tool)).toEqual(['slirp4netns', 'nft', 'nsenter'])
		expect(found[0]?.fix).toContain('apt-get install -y slirp4netns')
		expect(found[1]?.fix).toContain('apt-get install -y nftables')
	})

	it('refuse allow-all by name, and let deny-all through with the same tools', async () => {
		const error = await assertNetworkUsable('allow-all', missing).catch((e: unknown) => e)
		expect(error).toBeInstanceOf(LocalNetworkUnavailableError)
		expect((error as Error).message).toContain('/nonexistent/slirp4netns')
		expect((error as Error).message).toContain('apt-get install -y slirp4netns')
		await expect(assertNetworkUsable('deny-all', missing)).resolves.toBeUndefined()
	})
})
