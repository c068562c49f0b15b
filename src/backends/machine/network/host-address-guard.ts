/**
 * The nftables ruleset installed inside an allow-all sandbox's network namespace, as a pure function
 * of the host's addresses. slirp4netns dials out from the host's own namespace, so without it the
 * sandbox would reach every service listening on the host's addresses; with it, such a connection
 * is rejected inside the sandbox before it ever reaches slirp. Rejected rather than dropped: a
 * refused TCP connect (RST ⇒ ECONNREFUSED) or an ICMP "administratively prohibited"
 * (⇒ EHOSTUNREACH) tells the program at once instead of after a timeout.
 */
import { isIP } from 'node:net'

/** slirp4netns's fixed addresses: the gateway (its host alias) and the DNS forwarder. */
export const SLIRP_GATEWAY = '10.0.2.2'
export const SLIRP_DNS = '10.0.2.3'
export const SANDBOX_TABLE = 'namzu_sandbox_guard'

/**
 * Always refused besides the host's own addresses: the gateway alias (`--disable-host-loopback`
 * refuses it already; this is the second wall), link-local (cloud metadata at 169.254.169.254)
 * and the whole of `0.0.0.0/8`.
 */
export const ALWAYS_REFUSED_V4 = [SLIRP_GATEWAY, '169.254.0.0/16', '0.0.0.0/8'] as const

export interface HostAddresses {
	readonly v4: readonly string[]
	readonly v6: readonly string[]
}

function coveredV4(address: string): boolean {
	return address === SLIRP_GATEWAY || address.startsWith('169.254.') || address.startsWith('0.')
}

function isLinkLocalV6(address: string): boolean {
	const first = Number.parseInt(address.split(':')[0] ?? '', 16)
	return Number.isInteger(first) && first >= 0xfe80 && first <= 0xfebf
}

/** Splits, validates and deduplicates addresses (`os.networkInterfaces()` values, any order). */
export function hostAddressesFrom(addresses: readonly string[]): HostAddresses {
	const v4 = new Set<string>()
	const v6 = new Set<string>()
	for (const raw of addresses) {
		// A scoped link-local address (`fe80::1%eth0`) is the same address for the rule.
		const address = raw.split('%')[0] ?? ''
		const family = isIP(address)
		if (family === 4) v4.add(address)
		else if (family === 6) v6.add(address.toLowerCase())
	}
	return { v4: [...v4].sort(), v6: [...v6].sort() }
}

/**
 * `nft -f -` input. Loopback traffic (the sandbox's own services) is accepted; DNS to slirp's
 * forwarder is accepted; everything addressed to the host, the gateway alias or link-local is
 * refused; IPv6 leaves only over loopback (slirp4netns runs without `--enable-ipv6`, so this is the
 * second wall there too). Host v6 addresses are listed anyway, so enabling IPv6 later cannot
 * quietly open them.
 */
export function sandboxGuardRuleset(host: HostAddresses): string {
	// nft refuses overlapping elements in one set: host addresses the prefixes cover are left out.
	const v4 = [...ALWAYS_REFUSED_V4, ...host.v4.filter((address) => !coveredV4(address))]
	const v6 = ['fe80::/10', ...host.v6.filter((address) => !isLinkLocalV6(address))]
	return `${[
		`table inet ${SANDBOX_TABLE} {`,
		'\tchain output {',
		'\t\ttype filter hook output priority filter; policy accept;',
		'\t\toifname "lo" accept',
		`\t\tip daddr ${SLIRP_DNS} udp dport 53 accept`,
		`\t\tip daddr ${SLIRP_DNS} tcp dport 53 accept`,
		`\t\tip daddr ${SLIRP_DNS} jump refuse`,
		`\t\tip daddr { ${v4.join(', ')} } jump refuse`,
		`\t\tip6 daddr { ${v6.join(', ')} } jump refuse`,
		'\t\tmeta nfproto ipv6 jump refuse',
		'\t}',
		'\tchain refuse {',
		'\t\tmeta l4proto tcp reject with tcp reset',
		'\t\treject with icmpx type admin-prohibited',
		'\t}',
		'}',
	].join('\n')}\n`
}
