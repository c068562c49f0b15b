/**
 * Whether the guest agent behind a transport is still alive, as its tier reports it. A tier that
 * can watch its agent (the local tier sees the process exit) hands the end of it to `watch()`;
 * from the moment the death is declared every connection of the transport is failed with the one
 * `GuestDiedError`, every dial refuses with it at once, and every call raced through `guard()`
 * rejects with it. A guest's sockets close as it dies, a moment before its tier can tell why, so
 * a call that failed on its connection is held (at most `GUEST_DEATH_SETTLE_MS`) for a death
 * that explains it. A transport nobody watches behaves exactly as before: nothing is held.
 */
import { setMaxListeners } from 'node:events'
import { RemoteCancellationUnknownError, RemoteProtocolError } from '../refusals/refusal-errors.js'
import {
	AgentConnectionError,
	AgentDialFailedError,
	AgentReadTimeoutError,
	GuestDiedError,
	type GuestExit,
} from './transport-errors.js'

/** How long a failure that may be the guest's death waits for the tier to declare it. */
export const GUEST_DEATH_SETTLE_MS = 500

/** Failures a dying guest produces before its tier has seen it die: its connections breaking. */
export function mayBeGuestDeath(error: unknown): boolean {
	return (
		error instanceof AgentConnectionError ||
		error instanceof AgentDialFailedError ||
		error instanceof AgentReadTimeoutError ||
		error instanceof RemoteProtocolError ||
		error instanceof RemoteCancellationUnknownError
	)
}

/**
 * One transport's "guest gone" signal (`transport.liveness`): a tier that can see its guest end
 * hands that end to `watch()`; from then on every channel, dial and guarded call of the transport
 * fails with the one `GuestDiedError`.
 */
export class GuestLiveness {
	readonly #controller = new AbortController()
	#watched = false
	#error: GuestDiedError | undefined

	constructor() {
		// Every open connection listens for the death; any number of them is legitimate.
		setMaxListeners(0, this.#controller.signal)
	}

	/**
	 * Feeds the guest's end: `death` resolves with how it ended, or with undefined when the tier
	 * ended it itself (a teardown is not a death to report). Never rejects (a rejection is ignored).
	 */
	watch(death: Promise<GuestExit | undefined>): void {
		this.#watched = true
		death.then(
			(exit) => {
				if (exit !== undefined) this.declare(exit)
			},
			() => undefined,
		)
	}

	/** Records the death (the first one wins) and fails everything that is open. */
	declare(exit: GuestExit): GuestDiedError {
		if (this.#error) return this.#error
		const error = new GuestDiedError(exit)
		this.#error = error
		this.#controller.abort(error)
		return error
	}

	/** Whether a tier watches this guest (only then are failures held for a death). */
	get watched(): boolean {
		return this.#watched
	}

	/** The death, once declared. */
	get error(): GuestDiedError | undefined {
		return this.#error
	}

	/** Aborted, with the `GuestDiedError` as its reason, once the death is declared. */
	get signal(): AbortSignal {
		return this.#controller.signal
	}

	/** Throws the `GuestDiedError` once the death is declared; a no-op while the guest lives. */
	throwIfDied(): void {
		if (this.#error) throw this.#error
	}

	/** `signal` joined with the death. */
	join(signal: AbortSignal | undefined): AbortSignal {
		return signal ? AbortSignal.any([signal, this.#controller.signal]) : this.#controller.signal
	}

	/** Told once, when the death is declared (at once if it already was). Returns an unsubscribe. */
	onDied(listener: (error: GuestDiedError) => void): () => void {
		if (this.#error) {
			listener(this.#error)
			return () => undefined
		}
		const signal = this.#controller.signal
		// `declare` sets the error before it aborts the signal.
		const onAbort = () => {
			if (this.#error) listener(this.#error)
		}
		signal.addEventListener('abort', onAbort, { once: true })
		return () => signal.removeEventListener('abort', onAbort)
	}

	/**
	 * The death that explains a lost connection or a failed call, if the guest is watched and its
	 * death is declared within `GUEST_DEATH_SETTLE_MS`; undefined otherwise (at once when nobody
	 * watches, or the failure is a guest's answer rather than a broken connection).
	 */
	explain(error?: unknown): Promise<GuestDiedError | undefined> {
		if (this.#error) return Promise.resolve(this.#error)
		if (!this.#watched || (error !== undefined && !mayBeGuestDeath(error))) {
			return Promise.resolve(undefined)
		}
		return new Promise((resolve) => {
			const timer = setTimeout(() => {
				off()
				resolve(undefined)
			}, GUEST_DEATH_SETTLE_MS)
			const off = this.onDied((died) => {
				clearTimeout(timer)
				resolve(died)
			})
		})
	}

	/**
	 * `pending`, raced against the death: it rejects with the `GuestDiedError` the moment the death
	 * is declared (what `pending` does afterwards is ignored), and a failure of `pending` that the
	 * death explains becomes that error.
	 */
	guard<T>(pending: Promise<T>): Promise<T> {
		pending.catch(() => undefined)
		if (this.#error) return Promise.reject(this.#error)
		return new Promise<T>((resolve, reject) => {
			const off = this.onDied(reject)
			pending.then(
				(value) => {
					off()
					resolve(value)
				},
				(error: unknown) => {
					off()
					void this.explain(error).then((died) => reject(died ?? error))
				},
			)
		})
	}
}
