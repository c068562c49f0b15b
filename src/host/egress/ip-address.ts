/**
 * IP literals as numbers: parsing both families (IPv4-mapped IPv6 folded to IPv4, so one rule set
 * covers both spellings), CIDR blocks with containment, and the one decoder of the IPv6 forms that
 * carry an IPv4 address (NAT64, 6to4, Teredo, ...): whatever classifies an address asks it, so an
 * internal IPv4 address cannot be reached by spelling it inside an IPv6 one.
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

/** How an IPv6 address carries an IPv4 one. */
export type Ipv4Embedding =
	| 'ipv4-mapped'
	| 'ipv4-translated'
	| 'ipv4-compatible'
	| 'nat64'
	| '6to4'
	| 'teredo-server'
	| 'teredo-client'
	| 'isatap'

interface EmbeddingForm {
	readonly form: Ipv4Embedding
	/** Whether the 128-bit value is of this form. */
	readonly matches: (value: bigint) => boolean
	/** Bits below the IPv4 address (0: the last 32 bits). */
	readonly shift: bigint
	/** Teredo stores its client's address inverted. */
	readonly inverted?: boolean
}

const under = (prefix: bigint, bits: bigint) => (value: bigint) => value >> (128n - bits) === prefix
const V4_MASK = 0xffffffffn

/**
 * The forms, by prefix: IPv4-mapped `::ffff:0:0/96`, IPv4-translated `::ffff:0:0:0/96` (SIIT),
 * IPv4-compatible `::/96`, NAT64's well-known `64:ff9b::/96` (its local-use `64:ff9b:1::/48` puts
 * the address where the operator's prefix length says, so it is denied whole, see
 * `private-ranges.ts`), 6to4 `2002::/16` (bits 16-47), Teredo `2001::/32` (the server at bits
 * 32-63, the client inverted in the last 32), and ISATAP's interface identifier `[02]00:5efe`.
 */
const EMBEDDINGS: readonly EmbeddingForm[] = [
	{ form: 'ipv4-mapped', matches: under(0xffffn, 96n), shift: 0n },
	{ form: 'ipv4-translated', matches: under(0xffff0000n, 96n), shift: 0n },
	{ form: 'ipv4-compatible', matches: under(0n, 96n), shift: 0n },
	{ form: 'nat64', matches: under(0x0064ff9b0000000000000000n, 96n), shift: 0n },
	{ form: '6to4', matches: under(0x2002n, 16n), shift: 80n },
	{ form: 'teredo-server', matches: under(0x20010000n, 32n), shift: 64n },
	{ form: 'teredo-client', matches: under(0x20010000n, 32n), shift: 0n, inverted: true },
	{ form: 'isatap', matches: (value) => ((value >> 32n) & 0xfdffffffn) === 0x5efen, shift: 0n },
]

/** Every IPv4 address an IPv6 address carries, with its form; none for an IPv4 address. */
export function embeddedIpv4Of(
	address: IpAddress,
): readonly { readonly form: Ipv4Embedding; readonly address: IpAddress }[] {
	if (address.family !== 6) return []
	return EMBEDDINGS.filter((embedding) => embedding.matches(address.value)).map((embedding) => {
		const bits = (address.value >> embedding.shift) & V4_MASK
		return {
			form: embedding.form,
			address: { family: 4, value: embedding.inverted ? bits ^ V4_MASK : bits },
		}
	})
}

/** An IPv4 or IPv6 literal (IPv6 without brackets or zone), or undefined. */
export function parseIpAddress(text: string): IpAddress | undefined {
	const v4 = ipv4Value(text)
	if (v4 !== undefined) return { family: 4, value: BigInt(v4) }
	const v6 = parseIpv6(text)
	if (v6 === undefined) return undefined
	const address: IpAddress = { family: 6, value: v6 }
	// A mapped address IS its IPv4 address to the socket API: folded, so one rule set covers both.
	const mapped = embeddedIpv4Of(address).find((embedded) => embedded.form === 'ipv4-mapped')
	return mapped?.address ?? address
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
