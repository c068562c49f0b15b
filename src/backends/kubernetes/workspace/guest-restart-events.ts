/**
 * When a workspace's guest is not the one it was: the pod was replaced (a new uid under the same
 * name) or the agent process inside the same pod restarted (a new `guestBootId`). The decision is
 * pure (`guestRestartEvent`); `GuestRestartWatch` keeps the guest last seen and tells listeners.
 * The handle's own `suspend()`/`resume()` replaces the pod on purpose and says so (`own-resume`):
 * that binding becomes the new baseline silently, so a pod someone else replaced after it is
 * still reported, naming the pod the resume had bound.
 */
import type { KubernetesGuestRef } from './guest-identity.js'

export type KubernetesGuestRestartReason = 'pod-replaced' | 'container-restarted'

/** What `onGuestRestart` listeners receive; both halves name their own pod. */
export interface KubernetesGuestRestartEvent {
	readonly reason: KubernetesGuestRestartReason
	readonly previous: KubernetesGuestRef
	readonly current: KubernetesGuestRef
}

export type KubernetesGuestRestartListener = (event: KubernetesGuestRestartEvent) => void

/** Where an observation of the guest came from. */
export type GuestObservationSource =
	/** A reply carried the agent's boot id, or a rebind followed a replaced pod. */
	| 'guest'
	/** The handle's own create or resume bound this pod: a baseline, never an event. */
	| 'own-resume'

/**
 * The change `current` is relative to `previous`, if any: another pod uid is `pod-replaced`; in
 * the same pod, two boot ids that differ are `container-restarted`. A boot id learned for the
 * first time (an older guest sends none) is no restart.
 */
export function guestRestartReason(
	previous: KubernetesGuestRef,
	current: KubernetesGuestRef,
): KubernetesGuestRestartReason | undefined {
	if (previous.podUid !== current.podUid) return 'pod-replaced'
	if (previous.guestBootId === undefined || current.guestBootId === undefined) return undefined
	return previous.guestBootId === current.guestBootId ? undefined : 'container-restarted'
}

/** The event an observation is, given the guest seen before it (none before the first). */
export function guestRestartEvent(
	previous: KubernetesGuestRef | undefined,
	current: KubernetesGuestRef,
	source: GuestObservationSource,
): KubernetesGuestRestartEvent | undefined {
	if (previous === undefined || source === 'own-resume') return undefined
	const reason = guestRestartReason(previous, current)
	return reason === undefined ? undefined : { reason, previous, current }
}

/** The same guest, with what `next` adds: a boot id learned in the pod already known. */
function merged(previous: KubernetesGuestRef | undefined, next: KubernetesGuestRef) {
	if (next.guestBootId !== undefined || previous?.podUid !== next.podUid) return next
	return previous
}

/** The guest last seen and the listeners told when it changes. */
export class GuestRestartWatch {
	readonly #listeners = new Set<KubernetesGuestRestartListener>()
	#current: KubernetesGuestRef | undefined

	/** The guest last seen (undefined before the first binding). */
	get current(): KubernetesGuestRef | undefined {
		return this.#current
	}

	/** Registers a listener; the function returned removes it. */
	subscribe(listener: KubernetesGuestRestartListener): () => void {
		const entry: KubernetesGuestRestartListener = (event) => listener(event)
		this.#listeners.add(entry)
		return () => {
			this.#listeners.delete(entry)
		}
	}

	/** Records an observation and tells every listener when it is a restart. */
	observe(guest: KubernetesGuestRef, source: GuestObservationSource): void {
		const event = guestRestartEvent(this.#current, guest, source)
		this.#current = merged(this.#current, guest)
		if (event === undefined) return
		for (const listener of [...this.#listeners]) {
			try {
				listener(event)
			} catch {
				// A listener's failure is its own; the others are still told.
			}
		}
	}
}
