/**
 * The lease of one created object: its absolute `shutdownTime` bounds a leak, so a live handle
 * merge-PATCHes it a full TTL forward on the schedule in lease-schedule.ts. A failed renewal is
 * reported to `onError` and retried on the capped backoff; each PATCH runs on its own bound so an
 * unanswered one is abandoned, not waited on. A renewal that finds the object gone (404/410) stops
 * the loop and calls `onGone`. `stop()` (destroy) ends it; no PATCH is sent after it. The timer is
 * not unref'd: a handle dropped without `destroy()` keeps renewing for the life of the process.
 */

import { KubernetesAlreadyGoneError } from './api/api-errors.js'
import type { KubernetesApiPort } from './kubernetes-api-port.js'
import { shutdownTimeAt, shutdownTimePatch } from './kubernetes-objects.js'
import { leaseRenewalTimeoutMs, nextLeaseDelayMs } from './lease-schedule.js'
import { apiFailureShape } from './readiness.js'

export interface LeaseRenewalOptions {
	readonly api: KubernetesApiPort
	/** Path of the created object (claim or Sandbox). */
	readonly path: string
	readonly kind: 'claim' | 'sandbox'
	readonly ttlSeconds: number
	readonly onError?: (error: Error) => void
	readonly onGone: (error: Error) => void
	/** Injected for tests. */
	readonly now?: () => number
	readonly random?: () => number
}

/** True for an API failure that says the object no longer exists. */
export function isObjectGoneFailure(error: unknown): boolean {
	if (error instanceof KubernetesAlreadyGoneError) return true
	const shape = apiFailureShape(error)
	return shape?.kind === 'status' && (shape.status === 404 || shape.status === 410)
}

export class KubernetesLeaseRenewal {
	readonly #options: LeaseRenewalOptions
	readonly #stopped = new AbortController()
	#timer: NodeJS.Timeout | undefined
	#consecutiveFailures = 0
	#gone = false

	constructor(options: LeaseRenewalOptions) {
		this.#options = options
	}

	get stopped(): boolean {
		return this.#stopped.signal.aborted
	}

	get gone(): boolean {
		return this.#gone
	}

	get consecutiveFailures(): number {
		return this.#consecutiveFailures
	}

	/** Schedules the first renewal a jittered half TTL from now. */
	start(): void {
		this.#schedule(nextLeaseDelayMs({ ok: true }, this.#options.ttlSeconds, this.#random()))
	}

	stop(): void {
		this.#stopped.abort()
		if (this.#timer) clearTimeout(this.#timer)
		this.#timer = undefined
	}

	/**
	 * One renewal attempt; resolves with the delay it scheduled the next one at (undefined once the
	 * loop stopped). Exposed so tests drive the loop without waiting half a TTL.
	 */
	async tick(): Promise<number | undefined> {
		if (this.stopped) return undefined
		const { api, path, kind, ttlSeconds } = this.#options
		const now = this.#options.now?.() ?? Date.now()
		const bound = AbortSignal.timeout(leaseRenewalTimeoutMs(ttlSeconds))
		const signal = AbortSignal.any([bound, this.#stopped.signal])
		try {
			await api.mergePatch(path, shutdownTimePatch(kind, shutdownTimeAt(now, ttlSeconds)), {
				signal,
			})
			this.#consecutiveFailures = 0
		} catch (caught) {
			if (this.stopped) return undefined
			const error = caught instanceof Error ? caught : new Error(String(caught))
			if (isObjectGoneFailure(error)) {
				this.#gone = true
				this.stop()
				this.#options.onGone(error)
				return undefined
			}
			this.#consecutiveFailures++
			try {
				this.#options.onError?.(error)
			} catch {
				// A throwing callback must not end the lease.
			}
		}
		if (this.stopped) return undefined
		const delay = nextLeaseDelayMs(
			this.#consecutiveFailures === 0
				? { ok: true }
				: { ok: false, consecutiveFailures: this.#consecutiveFailures },
			ttlSeconds,
			this.#random(),
		)
		this.#schedule(delay)
		return delay
	}

	#schedule(delayMs: number): void {
		if (this.stopped) return
		if (this.#timer) clearTimeout(this.#timer)
		this.#timer = setTimeout(() => {
			this.#timer = undefined
			void this.tick()
		}, delayMs)
	}

	#random(): number {
		return this.#options.random?.() ?? Math.random()
	}
}
