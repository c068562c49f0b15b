/**
 * IP literals as numbers: parsing both families (IPv4-mapped IPv6 folded to IPv4, so one rule set
 * covers both spellings), and CIDR blocks with containment.
 */
import { isIPv6 } from 'node:net'
import { ipv4Text, ipv4Value } from '../../wire/egress-bridge.js'

export interface IpAddress {
	readonly family: 4 | 6
	readonly value: bigint
}

export interface CidrBlock {
	readonly family: 4 | 6
	readonly network: bigint
	readonly prefix: number
}

const BITS = { 4: 32, 6: 128 } as const

function parseIpv6(text: string): bigint | undefined {
	if (!isIPv6(text) || text.includes('%')) return undefined
	let head = text
	let tailV4: number | undefined
	const lastColon = text.lastIndexOf(':')
	if (text.slice(lastColon + 1).includes('.')) {
		tailV4 = ipv4Value(text.slice(lastColon + 1))
		if (tailV4 === undefined) return undefined
		head = `${text.slice(0, lastColon + 1)}0:0`
	}
	const [left = '', right] = head.split('::')
	const groups = (part: string) => (part === '' ? [] : part.split(':'))
	const leftGroups = groups(left)
	const rightGroups = right === undefined ? [] : groups(right)
	const missing = 8 - leftGroups.length - rightGroups.length
	const all = [
		...leftGroups,
		...Array<string>(right === undefined ? 0 : missing).fill('0'),
		...rightGroups,
	]
	if (all.length !== 8) return undefined
	let value = 0n
	for (const group of all) value = (value << 16n) | BigInt(Number.parseInt(group, 16))
	if (tailV4 !== undefined) value = (value & ~0xffffffffn) | BigInt(tailV4)
	return value
}

const MAPPED_PREFIX = 0xffffn << 32n

/** An IPv4 or IPv6 literal (IPv6 without brackets or zone), or undefined. */
export function parseIpAddress(text: string): IpAddress | undefined {
	const v4 = ipv4Value(text)
	if (v4 !== undefined) return { family: 4, value: BigInt(v4) }
	const v6 = parseIpv6(text)
	if (v6 === undefined) return undefined
	if (v6 >> 32n === MAPPED_PREFIX >> 32n) return { family: 4, value: v6 & 0xffffffffn }
	return { family: 6, value: v6 }
}

/** `address/prefix` (a bare address is a single-address block), network bits below the prefix zero. */
export function parseCidr(text: string): CidrBlock | undefined {
	const slash = text.indexOf('/')
	const address = parseIpAddress(slash < 0 ? text : text.slice(0, slash))
	if (address === undefined) return undefined
	const bits = BITS[address.family]
	// A mapped IPv6 literal folds to IPv4: its prefix counts from the IPv4 part.
	const mapped = address.family === 4 && text.slice(0, slash < 0 ? undefined : slash).includes(':')
	let prefix = bits
	if (slash >= 0) {
		const digits = text.slice(slash + 1)
		if (!/^(?:0|[1-9][0-9]{0,2})$/.test(digits)) return undefined
		prefix = Number(digits) - (mapped ? 96 : 0)
		if (prefix < 0 || prefix > bits) return undefined
	}
	const hostBits = BigInt(bits - prefix)
	const network = (address.value >> hostBits) << hostBits
	if (network !== address.value) return undefined
	return { family: address.family, network, prefix }
}

export function cidrContains(block: CidrBlock, address: IpAddress): boolean {
	if (block.family !== address.family) return false
	const hostBits = BigInt(BITS[block.family] - block.prefix)
	return address.value >> hostBits === block.network >> hostBits
}

/** Canonical text of an address (dotted quad, or IPv6 groups without compression). */
export function ipAddressText(address: IpAddress): string {
	if (address.family === 4) return ipv4Text(Number(address.value))
	const groups: string[] = []
	for (let shift = 112n; shift >= 0n; shift -= 16n) {
		groups.push(((address.value >> shift) & 0xffffn).toString(16))
	}
	return groups.join(':')
}
