/**
 * Pure address and naming plan of the harness network. Each running kubelet owns one "slot": a
 * bridge `nzkbr<slot>` holding `.1` of the /24 `10.244.<80 + slot>.0/24`, and its pods' addresses
 * `.2`–`.254` of that /24. Slots let two kubelets (two test files in parallel) coexist without
 * sharing state; a slot whose /24 overlaps any route the machine already has is never used.
 * Interface names stay within Linux's 15 characters.
 */

export const SLOT_COUNT = 16
export const FIRST_POD_HOST = 2
export const LAST_POD_HOST = 254
const BASE_THIRD_OCTET = 80

export interface SlotPlan {
	readonly slot: number
	readonly bridge: string
	/** `10.244.<n>.0/24`. */
	readonly subnet: string
	/** `10.244.<n>.1`, the bridge's address (and the pods' `hostIP`). */
	readonly gateway: string
	readonly prefix: string
	/** Every netns and host-side veth of this slot starts with this. */
	readonly namePrefix: string
}

export function slotPlan(slot: number): SlotPlan {
	if (!Number.isInteger(slot) || slot < 0 || slot >= SLOT_COUNT) {
		throw new RangeError(`slot must be 0..${SLOT_COUNT - 1}, got ${slot}`)
	}
	const prefix = `10.244.${BASE_THIRD_OCTET + slot}`
	return {
		slot,
		bridge: `nzkbr${slot}`,
		subnet: `${prefix}.0/24`,
		gateway: `${prefix}.1`,
		prefix,
		namePrefix: `nzk${slot}`,
	}
}

export function podAddress(plan: SlotPlan, host: number): string {
	return `${plan.prefix}.${host}`
}

/** Network namespace name of the pod holding host number `host`. */
export function podNetnsName(plan: SlotPlan, host: number): string {
	return `${plan.namePrefix}-p${host}`
}

/** Host-side veth of the pod holding host number `host`. */
export function podVethName(plan: SlotPlan, host: number): string {
	return `${plan.namePrefix}h${host}`
}

/**
 * The pod's `eth0` MAC, fixed by slot and host number: an address handed to a new pod (a resumed
 * Sandbox gets its predecessor's) keeps its MAC, so the neighbour entries the host and the other
 * pods still hold for it stay right instead of pointing at a deleted veth until they expire.
 */
export function podMacAddress(plan: SlotPlan, host: number): string {
	const hex = (n: number) => n.toString(16).padStart(2, '0')
	return `02:6e:7a:00:${hex(plan.slot)}:${hex(host)}`
}

/** Lowest free host number in `.2`–`.254`, or undefined when the /24 is full. */
export function lowestFreeHost(used: ReadonlySet<number>): number | undefined {
	for (let host = FIRST_POD_HOST; host <= LAST_POD_HOST; host++) if (!used.has(host)) return host
	return undefined
}

export function ipv4ToNumber(address: string): number | undefined {
	const parts = address.split('.')
	if (parts.length !== 4) return undefined
	let value = 0
	for (const part of parts) {
		if (!/^\d{1,3}$/.test(part)) return undefined
		const octet = Number(part)
		if (octet > 255) return undefined
		value = value * 256 + octet
	}
	return value
}

/** `[first, last]` numeric range of a CIDR (`a.b.c.d/n`, or a bare address as /32). */
export function cidrRange(cidr: string): readonly [number, number] | undefined {
	const [address, bitsText] = cidr.split('/')
	const base = ipv4ToNumber(address ?? '')
	const bits = bitsText === undefined ? 32 : Number(bitsText)
	if (base === undefined || !Number.isInteger(bits) || bits < 0 || bits > 32) return undefined
	const size = 2 ** (32 - bits)
	const first = base - (base % size)
	return [first, first + size - 1]
}

export function cidrsOverlap(a: string, b: string): boolean {
	const left = cidrRange(a)
	const right = cidrRange(b)
	if (left === undefined || right === undefined) return false
	return left[0] <= right[1] && right[0] <= left[1]
}

/** One row of `ip -j route show` as far as the plan cares. */
export interface RouteRow {
	readonly dst: string
	readonly dev?: string
	readonly gateway?: string
}

/**
 * Whether a slot's /24 is free to use: no existing route other than the default one (and other
 * than this slot's own bridge, left by a crashed run and about to be removed) overlaps it.
 */
export function slotCollides(plan: SlotPlan, routes: readonly RouteRow[]): boolean {
	return routes.some(
		(route) =>
			route.dst !== 'default' && route.dev !== plan.bridge && cidrsOverlap(route.dst, plan.subnet),
	)
}

/** One row of `ip -j route get <ip>`. */
export interface RouteLookup {
	readonly dst?: string
	readonly dev?: string
	readonly gateway?: string
}

/**
 * The network safety rule as a predicate: a pod address may be dialed only when the kernel routes
 * it straight onto this slot's bridge (no gateway, so no packet can head for the default route).
 */
export function routeIsOnBridge(plan: SlotPlan, address: string, lookup: RouteLookup): boolean {
	return (
		cidrsOverlap(`${address}/32`, plan.subnet) &&
		lookup.dev === plan.bridge &&
		lookup.gateway === undefined
	)
}
