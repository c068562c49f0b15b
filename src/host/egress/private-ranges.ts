/**
 * The deny set every proxied connection is checked against after the proxy resolved the name
 * itself: addresses that reach the host, its neighbours or the cloud's metadata service rather
 * than the internet. An IPv6 address that carries an IPv4 one (NAT64, 6to4, Teredo, ...) is
 * judged by that IPv4 address too, so a translator cannot carry the sandbox to an internal one.
 * Only a CIDR rule that covers the address lets a connection through.
 */
import {
	type CidrBlock,
	cidrContains,
	embeddedIpv4Of,
	type IpAddress,
	parseCidr,
} from './ip-address.js'

interface DeniedRange {
	readonly block: CidrBlock
	readonly name: string
}

const RANGES: readonly (readonly [string, string])[] = [
	['0.0.0.0/8', 'this-network'],
	['10.0.0.0/8', 'private'],
	['100.64.0.0/10', 'shared-address-space'],
	['127.0.0.0/8', 'loopback'],
	['169.254.0.0/16', 'link-local'],
	['172.16.0.0/12', 'private'],
	['192.0.0.0/24', 'ietf-protocol'],
	['192.168.0.0/16', 'private'],
	['198.18.0.0/15', 'benchmarking'],
	['224.0.0.0/4', 'multicast'],
	['240.0.0.0/4', 'reserved'],
	['::/128', 'unspecified'],
	['::1/128', 'loopback'],
	['64:ff9b:1::/48', 'nat64-local'],
	['fc00::/7', 'unique-local'],
	['fe80::/10', 'link-local'],
	['fec0::/10', 'site-local'],
	['ff00::/8', 'multicast'],
]

function block(text: string): CidrBlock {
	const parsed = parseCidr(text)
	if (parsed === undefined) throw new Error(`bad built-in range ${text}`)
	return parsed
}

const DENIED: readonly DeniedRange[] = RANGES.map(([text, name]) => ({ block: block(text), name }))

/**
 * Why `address` is refused by default (`loopback`, `private`, `link-local` — 169.254.169.254, the
 * metadata service, is in it —, `host-address`, `nat64:loopback` for an IPv4 address carried in
 * an IPv6 one, …), or undefined when it is a public address.
 */
export function deniedRangeOf(
	address: IpAddress,
	hostAddresses: readonly IpAddress[],
): string | undefined {
	if (
		hostAddresses.some((host) => host.family === address.family && host.value === address.value)
	) {
		return 'host-address'
	}
	const range = DENIED.find((denied) => cidrContains(denied.block, address))?.name
	if (range !== undefined) return range
	for (const embedded of embeddedIpv4Of(address)) {
		const carried = deniedRangeOf(embedded.address, hostAddresses)
		if (carried !== undefined) return `${embedded.form}:${carried}`
	}
	return undefined
}
