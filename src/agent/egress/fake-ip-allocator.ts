/**
 * The capture helper's name ↔ fake-address map: each name the DNS stub answers gets an address of
 * 198.18.0.0/15, chosen by FNV-1a of the name (so a name keeps its address across a restart of the
 * helper while the map is small), probing onwards on a collision. An address is never handed to a
 * second name, and once `capacity` names hold one, new names get none (fail closed).
 */
import { FAKE_IP_COUNT, FAKE_IP_FIRST, ipv4Text, ipv4Value } from '../../wire/egress-bridge.js'

function fnv1a(text: string): number {
	let hash = 0x811c9dc5
	for (let index = 0; index < text.length; index++) {
		hash ^= text.charCodeAt(index)
		hash = Math.imul(hash, 0x01000193) >>> 0
	}
	return hash
}

/** Half the range: probing stays short, and the bound on memory is explicit. */
export const DEFAULT_FAKE_IP_CAPACITY = FAKE_IP_COUNT / 2

export class FakeIpAllocator {
	readonly #byName = new Map<string, number>()
	readonly #byOffset = new Map<number, string>()

	constructor(readonly capacity = DEFAULT_FAKE_IP_CAPACITY) {}

	/** The fake address of `name` (normalized), allotted now if new; undefined when full. */
	addressFor(name: string): string | undefined {
		const known = this.#byName.get(name)
		if (known !== undefined) return ipv4Text(FAKE_IP_FIRST + known)
		if (this.#byName.size >= this.capacity) return undefined
		// Offsets 0 and the last are the block's network and broadcast spellings: never handed out.
		const usable = FAKE_IP_COUNT - 2
		let offset = 1 + (fnv1a(name) % usable)
		while (this.#byOffset.has(offset)) offset = 1 + (offset % usable)
		this.#byName.set(name, offset)
		this.#byOffset.set(offset, name)
		return ipv4Text(FAKE_IP_FIRST + offset)
	}

	/** The name a fake address was handed out for, if it was. */
	nameFor(address: string): string | undefined {
		const value = ipv4Value(address)
		if (value === undefined) return undefined
		return this.#byOffset.get(value - FAKE_IP_FIRST)
	}

	get size(): number {
		return this.#byName.size
	}
}
