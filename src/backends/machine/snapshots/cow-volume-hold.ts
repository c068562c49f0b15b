/**
 * A provider's own registration on its state directory's copy-on-write volume (`cow-volume.ts`),
 * from the first ephemeral workspace it puts there until it closes. Without it, the last sandbox
 * out unmounts the volume and removes its image, and the next cold `create()` formats and mounts it
 * again before anything else of the sandbox can start; with it, only the first one does. The
 * registration is an operation's (`op-<pid>-<random>`), so a host that dies without closing leaves
 * a user the reaper drops as soon as it sees the process gone.
 */
import { randomBytes } from 'node:crypto'
import { attachVolumeUser, detachVolumeUser } from './cow-volume.js'
import type { VolumeUserName } from './cow-volume-decision.js'

interface Held {
	readonly stateBase: string
	readonly user: VolumeUserName
	readonly attached: Promise<void>
}

export class VolumeHold {
	#held: Held | undefined
	#closed = false
	#releasing: Promise<void> | undefined

	/**
	 * Holds the volume of `stateBase` mounted (making it first when needed). Once per hold; a failed
	 * attach is not kept, so the next one tries again. After `release()` it does nothing: the
	 * sandboxes' own registrations keep the volume while they live.
	 */
	async attach(stateBase: string, volumeBytes: number): Promise<void> {
		if (this.#closed) return
		if (this.#held === undefined) {
			const user: VolumeUserName = `op-${process.pid}-${randomBytes(4).toString('hex')}`
			const held: Held = {
				stateBase,
				user,
				attached: attachVolumeUser(stateBase, user, volumeBytes).then(() => undefined),
			}
			this.#held = held
			held.attached.catch(() => {
				if (this.#held === held) this.#held = undefined
			})
		}
		// One provider, one state directory: a hold on another one is not this one's to give.
		if (this.#held.stateBase !== stateBase) return
		await this.#held.attached
	}

	/** Drops the registration; the last user out unmounts the volume. Idempotent. */
	release(): Promise<void> {
		this.#closed = true
		this.#releasing ??= this.#drop()
		return this.#releasing
	}

	async #drop(): Promise<void> {
		const held = this.#held
		this.#held = undefined
		if (held === undefined) return
		const attached = await held.attached.then(
			() => true,
			() => false,
		)
		if (attached) await detachVolumeUser(held.stateBase, held.user)
	}
}
