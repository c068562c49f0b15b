/**
 * The lifecycle half of `AgentSandbox`: which calls are admitted and in flight (`busy`), which
 * terminals and connections the handle owns, the retirement after an unconfirmable cancellation
 * (or, for a tier that keeps its unit, the record that nothing was retired),
 * the guest's death, and the one idempotent teardown. The verbs live in `agent-sandbox.ts`; every
 * one of them runs through `run` or `track`, so a destroyed or retired handle refuses them all the
 * same way, and every call in flight is raced against the guest's death (`GuestLiveness`): once the
 * tier reports it, each fails with the one `GuestDiedError`, later calls refuse with it, and the
 * status is the contract's terminal `destroyed` (the contract has no status of its own for it;
 * `guestExit` tells a death from a `destroy()`). `destroy()` still releases the unit.
 */

import { setMaxListeners } from 'node:events'
import { settleWithin } from '../../common/bounded-promise.js'
import { SandboxDestroyedError } from '../../contract/errors.js'
import type { SandboxRetirementObservation } from '../../contract/retirement.js'
import type { SandboxStatus } from '../../contract/sandbox.js'
import { AGENT_REFUSAL } from '../../wire/refusals.js'
import { RemoteCancellationUnknownError } from '../refusals/refusal-errors.js'
import type { GuestLiveness } from '../transport/guest-liveness.js'
import { SandboxRetiredError } from './agent-sandbox-errors.js'

/** How long `destroy()` lets aborted in-flight calls settle before releasing the unit. */
export const DESTROY_IN_FLIGHT_SETTLE_MS = 2000

export interface SandboxLifetimeOptions {
	readonly id: string
	/** Frees the unit (process, VM, pod). Called once per successful teardown. */
	readonly release: (signal?: AbortSignal) => Promise<void>
	/** Removes the whole unit after an unconfirmable cancellation. */
	readonly retire?: (error: Error) => Promise<SandboxRetirementObservation>
	/**
	 * Set by a tier whose unit is worth more than one command (a workspace): an unconfirmable
	 * cancellation retires nothing and fences nothing; the error carries
	 * `{ accepted: false, reason }` and the handle keeps admitting calls.
	 */
	readonly keepOnUnconfirmedCancellation?: { readonly reason: string }
	/**
	 * Set by a tier that names a guest which fenced itself (a reservation refused `agent_retiring`):
	 * the refusal becomes this error and retires nothing, since no command of this call ran. Absent,
	 * it is an unconfirmable cancellation like any other.
	 */
	readonly fencedGuest?: (error: RemoteCancellationUnknownError, operation: string) => Error
	/** The guest's liveness, as its tier reports it (the transport's). */
	readonly liveness?: GuestLiveness
}

/** Something the handle owns until it ends: a terminal (`exited`) or a connection (`closed`). */
interface Ownable {
	readonly closed?: Promise<void>
	readonly exited?: Promise<unknown>
}

export class SandboxLifetime {
	readonly #options: SandboxLifetimeOptions
	readonly #lifetime = new AbortController()
	readonly #inFlight = new Set<Promise<unknown>>()
	/** What `destroy()` closes, each with its own close. */
	readonly #owned = new Map<Ownable, () => Promise<unknown>>()
	#destroyed = false
	#retirement: Promise<SandboxRetirementObservation> | undefined
	#teardown: Promise<void> | undefined

	constructor(options: SandboxLifetimeOptions) {
		// Every in-flight call listens on the lifetime signal (destroy aborts them all); any number of
		// concurrent calls is legitimate, so the default 10-listener warning would be a false alarm.
		setMaxListeners(0, this.#lifetime.signal)
		this.#options = options
	}

	get status(): SandboxStatus {
		if (this.#gone) return 'destroyed'
		return this.#inFlight.size > 0 ? 'busy' : 'ready'
	}

	get retirement(): Promise<SandboxRetirementObservation> | undefined {
		return this.#retirement
	}

	get #gone(): boolean {
		return (
			this.#destroyed ||
			this.#retirement !== undefined ||
			this.#options.liveness?.error !== undefined
		)
	}

	/** Refuses a call on a destroyed or retired handle, or one whose guest died. */
	admit(operation: string): void {
		if (this.#destroyed) throw new SandboxDestroyedError(this.#options.id, operation)
		if (this.#retirement) throw new SandboxRetiredError(this.#options.id, operation)
		this.#options.liveness?.throwIfDied()
	}

	/** `pending` raced against the guest's death (as it is when nobody watches the guest). */
	#againstDeath<T>(pending: Promise<T>): Promise<T> {
		return this.#options.liveness?.guard(pending) ?? pending
	}

	/** The caller's signal joined with the handle's lifetime (aborted by `destroy()`). */
	#signal(caller: AbortSignal | undefined): AbortSignal {
		return caller ? AbortSignal.any([caller, this.#lifetime.signal]) : this.#lifetime.signal
	}

	/** Admits the call, checks its arguments (`check` answers the caller's signal), then runs it. */
	async run<T>(
		operation: string,
		check: () => AbortSignal | undefined,
		call: (signal: AbortSignal) => Promise<T>,
	): Promise<T> {
		this.admit(operation)
		const pending = this.#againstDeath(call(this.#signal(check())))
		this.#inFlight.add(pending)
		try {
			return await pending
		} finally {
			this.#inFlight.delete(pending)
		}
	}

	/** `run` for a member that returns an iterable: in flight until the iteration ends. */
	async *track<T>(
		operation: string,
		caller: AbortSignal | undefined,
		open: (signal: AbortSignal) => AsyncIterable<T>,
	): AsyncGenerator<T, void, undefined> {
		this.admit(operation)
		let finish: () => void = () => {}
		const pending = new Promise<void>((resolve) => {
			finish = resolve
		})
		this.#inFlight.add(pending)
		try {
			yield* this.#guardIterable(operation, open(this.#signal(caller)))
		} finally {
			this.#inFlight.delete(pending)
			finish()
		}
	}

	/**
	 * `track` for a subscription that may last the handle's whole life (a watch): admitted, ended by
	 * `destroy()` and by the guest's death, but never counted in flight, so it never makes the
	 * sandbox `busy`.
	 */
	async *follow<T>(
		operation: string,
		caller: AbortSignal | undefined,
		open: (signal: AbortSignal) => AsyncIterable<T>,
	): AsyncGenerator<T, void, undefined> {
		this.admit(operation)
		yield* this.#guardIterable(operation, open(this.#signal(caller)))
	}

	async *#guardIterable<T>(
		operation: string,
		iterable: AsyncIterable<T>,
	): AsyncGenerator<T, void, undefined> {
		const iterator = iterable[Symbol.asyncIterator]()
		let stepping = false
		let done = false
		try {
			for (;;) {
				stepping = true
				const step = await this.#againstDeath(iterator.next())
				stepping = false
				if (step.done) {
					done = true
					return
				}
				yield step.value
			}
		} catch (error) {
			throw await this.#settle(error, operation)
		} finally {
			// A step the death raced out may still be running: never wait for it. Any other early exit
			// (break, return) ends the inner iteration first, as `yield*` would.
			if (stepping) void iterator.return?.()?.catch(() => undefined)
			else if (!done) await iterator.return?.()
		}
	}

	/** Runs an exec; an unconfirmable cancellation is settled (`#settle`) before it is rethrown. */
	async guard<T>(operation: string, call: () => Promise<T>): Promise<T> {
		try {
			return await call()
		} catch (error) {
			throw await this.#settle(error, operation)
		}
	}

	/**
	 * What an unconfirmable cancellation becomes: the tier's error for a self-fenced guest, a kept
	 * unit, or a retired one. Any other error passes unchanged.
	 */
	async #settle(error: unknown, operation: string): Promise<unknown> {
		if (!(error instanceof RemoteCancellationUnknownError)) return error
		const { fencedGuest, keepOnUnconfirmedCancellation: keep } = this.#options
		if (fencedGuest && error.guestCode === AGENT_REFUSAL.agent_retiring) {
			return fencedGuest(error, operation)
		}
		if (keep) {
			error.retirement ??= { accepted: false, reason: keep.reason }
			return error
		}
		await this.#retire(error)
		return error
	}

	/** Retires the unit once (later errors share the observation), records it, fences the handle. */
	async #retire(error: RemoteCancellationUnknownError): Promise<void> {
		if (error.retirement) return
		if (!this.#retirement) {
			const retire = this.#options.retire
			this.#retirement = retire
				? retire(error).catch(
						(failure: unknown): SandboxRetirementObservation => ({
							accepted: false,
							error: failure instanceof Error ? failure : new Error(String(failure)),
						}),
					)
				: Promise.resolve({ accepted: false, reason: 'retirement-unavailable' })
		}
		error.retirement = await this.#retirement
	}

	/**
	 * Something handed out after the handle went away meanwhile: `let go` (close or detach) it, then
	 * refuse the call.
	 */
	async refuseIfGone(operation: string, letGo: () => Promise<unknown>): Promise<void> {
		if (!this.#gone) return
		await letGo()
		this.admit(operation)
	}

	/** Registers a terminal or connection until it ends, or closes it if the handle went away. */
	async own<T extends Ownable>(
		resource: T,
		operation: string,
		close: () => Promise<unknown>,
	): Promise<T> {
		await this.refuseIfGone(operation, close)
		this.#owned.set(resource, close)
		const done = resource.exited ?? resource.closed
		const forget = () => this.#owned.delete(resource)
		// A guest's death rejects them; either way the resource is over.
		void done?.then(forget, forget)
		return resource
	}

	/**
	 * Idempotent; concurrent calls share one teardown, a failed one may be retried. Aborts in-flight
	 * calls, gives them a bounded moment, closes what the handle owns and what `alsoClose` names,
	 * then releases the unit.
	 */
	destroy(signal: AbortSignal | undefined, alsoClose: () => Promise<unknown>): Promise<void> {
		if (!this.#teardown) {
			this.#destroyed = true
			const teardown = this.#tearDown(signal, alsoClose)
			this.#teardown = teardown
			teardown.catch(() => {
				if (this.#teardown === teardown) this.#teardown = undefined
			})
		}
		return this.#teardown
	}

	async #tearDown(signal: AbortSignal | undefined, alsoClose: () => Promise<unknown>) {
		this.#lifetime.abort(new SandboxDestroyedError(this.#options.id, 'in-flight call'))
		// Aborted execs resolve as aborted once the guest confirms; give them a bounded moment.
		await settleWithin(Promise.allSettled([...this.#inFlight]), DESTROY_IN_FLIGHT_SETTLE_MS, {
			ref: false,
		})
		await Promise.all([...[...this.#owned.values()].map((close) => close()), alsoClose()])
		this.#owned.clear()
		await this.#options.release(signal)
	}
}
