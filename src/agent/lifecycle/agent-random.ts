/**
 * The agent's own random source for the ids it issues (execution ids, watcher ids, boot ids).
 * Node's `randomUUID` serves from a cache filled ahead of time, and OpenSSL's generator state lives
 * in process memory: two forks restored from one memory image would hand out the same "random"
 * ids. Every output here is an HMAC under a key that `mix` folds the host's per-restore seed into,
 * so after `restored` each fork's ids differ even when the bytes underneath repeat.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto'

export type RandomBytesSource = (size: number) => Buffer

export class ReseedableRandom {
	#key: Buffer
	#counter = 0n
	readonly #source: RandomBytesSource

	constructor(source: RandomBytesSource = randomBytes, initialKey: Buffer = source(32)) {
		this.#source = source
		this.#key = Buffer.from(initialKey)
	}

	/** Folds `seed` into the key: every output after it depends on it. */
	mix(seed: Uint8Array): void {
		this.#key = createHash('sha256').update(this.#key).update(seed).digest()
	}

	bytes(size: number): Buffer {
		const out = Buffer.alloc(size)
		for (let filled = 0; filled < size; filled += 32) {
			const counter = Buffer.alloc(8)
			counter.writeBigUInt64BE(this.#counter)
			this.#counter += 1n
			createHmac('sha256', this.#key)
				.update(counter)
				.update(this.#source(32))
				.digest()
				.copy(out, filled, 0, Math.min(32, size - filled))
		}
		return out
	}

	/** A canonical version-4 UUID. */
	uuid(): string {
		const b = this.bytes(16)
		b[6] = ((b[6] ?? 0) & 0x0f) | 0x40
		b[8] = ((b[8] ?? 0) & 0x3f) | 0x80
		const hex = b.toString('hex')
		return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
	}
}

/** The one source of the agent process. */
export const agentRandom = new ReseedableRandom()
