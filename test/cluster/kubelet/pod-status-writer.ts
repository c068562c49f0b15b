/**
 * Writes one pod's status through the `status` subresource: serialized (one PATCH in flight),
 * coalesced (a change during a write triggers one more), skipped when nothing changed, and retried
 * on the next sync tick after a failure (API paused or frozen).
 */
import type { KubeClient } from './kube-client.js'
import type { ObjectRef, PodCondition, PodStatus } from './kube-types.js'

export class PodStatusWriter {
	readonly #client: KubeClient
	readonly #ref: ObjectRef
	readonly #build: (previous: readonly PodCondition[]) => PodStatus | undefined
	#conditions: readonly PodCondition[] = []
	#last: string | undefined
	#writing: Promise<void> | undefined
	#dirty = false
	#closed = false

	constructor(
		client: KubeClient,
		ref: ObjectRef,
		build: (previous: readonly PodCondition[]) => PodStatus | undefined,
	) {
		this.#client = client
		this.#ref = ref
		this.#build = build
	}

	/** Seeds the conditions (and their transition times) from the object as last read. */
	seed(conditions: readonly PodCondition[] | undefined): void {
		if (this.#last === undefined && conditions) this.#conditions = conditions
	}

	/** Asks for a write of the current status; resolves when it (or a later one) is done. */
	schedule(): Promise<void> {
		if (this.#closed) return Promise.resolve()
		if (this.#writing) {
			this.#dirty = true
			return this.#writing
		}
		this.#writing = this.#loop().finally(() => {
			this.#writing = undefined
		})
		return this.#writing
	}

	async #loop(): Promise<void> {
		do {
			this.#dirty = false
			const status = this.#build(this.#conditions)
			if (status === undefined || this.#closed) return
			const text = JSON.stringify(status)
			if (text === this.#last) continue
			const path = `/api/v1/namespaces/${this.#ref.namespace}/pods/${this.#ref.name}/status`
			try {
				await this.#client.patch(path, 'merge', { status })
				this.#last = text
				this.#conditions = status.conditions ?? []
			} catch {
				// Retried on the next tick's schedule().
				return
			}
		} while (this.#dirty)
	}

	/** No more writes (the pod is being deleted for good). */
	close(): void {
		this.#closed = true
	}
}
