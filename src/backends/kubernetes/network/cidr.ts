/**
 * CIDR blocks as numbers, for the two places that need them: validating `exceptCidrs` (and routing
 * each to the block of its own family) and the union check's containment test. Pure. Only the
 * canonical text forms a NetworkPolicy `ipBlock` accepts are read: dotted quads, and IPv6 with at
 * most one `::`; anything else is not a CIDR.
 */

export interface Cidr {
	readonly family: 4 | 6
	/** The network address, host bits cleared. */
	readonly network: bigint
	readonly prefix: number
}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/

function parseIpv4(text: string): bigint | undefined {
	const match = IPV4.exec(text)
	if (!match) return undefined
	let value = 0n
	for (const part of match.slice(1)) {
		if (part.length > 1 && part.startsWith('0')) return undefined
		const octet = Number(part)
		if (octet > 255) return undefined
		value = (value << 8n) | BigInt(octet)
	}
	return value
}

function parseGroups(text: string): number[] | undefined {
	if (text === '') return []
	const groups: number[] = []
	for (const group of text.split(':')) {
		if (!/^[0-9a-fA-F]{1,4}$/.test(group)) return undefined
		groups.push(Number.parseInt(group, 16))
	}
	return groups
}

function parseIpv6(text: string): bigint | undefined {
	const halves = text.split('::')
	if (halves.length > 2) return undefined
	const head = parseGroups(halves[0] ?? '')
	const tail = halves.length === 2 ? parseGroups(halves[1] ?? '') : []
	if (!head || !tail) return undefined
	const missing = 8 - head.length - tail.length
	if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined
	const groups = [...head, ...new Array<number>(missing).fill(0), ...tail]
	let value = 0n
	for (const group of groups) value = (value << 16n) | BigInt(group)
	return value
}

/** `10.0.0.0/8` → its block; `undefined` for anything that is not an IPv4 or IPv6 CIDR. */
export function parseCidr(text: unknown): Cidr | undefined {
	if (typeof text !== 'string') return undefined
	const slash = text.indexOf('/')
	if (slash < 0 || slash !== text.lastIndexOf('/')) return undefined
	const address = text.slice(0, slash)
	const prefixText = text.slice(slash + 1)
	if (!/^\d{1,3}$/.test(prefixText) || (prefixText.length > 1 && prefixText.startsWith('0'))) {
		return undefined
	}
	const prefix = Number(prefixText)
	const v4 = parseIpv4(address)
	const family = v4 === undefined ? 6 : 4
	const value = v4 ?? (address.includes(':') ? parseIpv6(address) : undefined)
	if (value === undefined) return undefined
	const width = family === 4 ? 32 : 128
	if (prefix > width) return undefined
	const hostBits = BigInt(width - prefix)
	return { family, network: (value >> hostBits) << hostBits, prefix }
}

/** Whether every address of `inner` is in `outer`. */
export function cidrContains(outer: Cidr, inner: Cidr): boolean {
	if (outer.family !== inner.family || inner.prefix < outer.prefix) return false
	const width = outer.family === 4 ? 32 : 128
	const shift = BigInt(width - outer.prefix)
	return inner.network >> shift === outer.network >> shift
}

/** Whether the two blocks share any address. */
export function cidrsOverlap(a: Cidr, b: Cidr): boolean {
	return cidrContains(a, b) || cidrContains(b, a)
}
