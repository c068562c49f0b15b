import { raceSignal } from '../../../common/bounded-promise.js'
/**
 * The one state machine of a workspace handle. The recorded state moves only when the cluster
 * confirmed it (`suspended` after the patch landed AND the pod was seen stopped, `deleted` after
 * the DELETE resolved or found the object gone); a request that was never sent, or failed, leaves
 * the state it found. One flight per verb: a second request of the same verb joins the flight in
 * progress (which runs under the FIRST caller's signal), `destroy()` without options is a suspend
 * and joins one, a different verb queues behind it, and a joiner wanting more than the flight does
 * (a flush or a quiesce the flight skipped) is refused instead. A request under another holder
 * epoch than the flight's never joins it (the flight's write carries the flight's epoch): it
 * queues. A `resume` that brings its own epoch writes it even on a running workspace. A
 * suspension another process made is recorded as `detached`, never `suspended`: what was seen is
 * the object's mode, not the pod stopping, so this handle's own suspend still patches and waits.
 * The rules are pure
 * (`decideTransition`, `stateAfter`, `admits`); `WorkspaceTransitions` is their thin shell.
 */

/**
 * `running`: a session is bound. `detached`: no session and no confirmed suspension (a suspend
 * whose pod outlived the wait, a failed DELETE) — calls are refused, and both a suspend and a
 * resume send their request again. `suspended`, `deleted`: confirmed by the cluster.
 */
export type WorkspaceState = 'running' | 'detached' | 'suspended' | 'deleted'

export type TransitionRequest = (
	| {
			readonly verb: 'suspend'
			/** `suspend()` (true) or a `destroy()` that suspends (false). */
			readonly explicit: boolean
			readonly flush: boolean
			readonly quiesce: boolean
	  }
	| { readonly verb: 'delete' }
	| {
			readonly verb: 'resume'
			/** The call passed its own epoch: it is written even when the workspace is running. */
			readonly writesEpoch?: boolean
	  }
) & {
	/** The holder epoch the request's write carries (none: unfenced). */
	readonly epoch?: number
}

export type TransitionDecision =
	| { readonly kind: 'done' }
	| { readonly kind: 'start' }
	| { readonly kind: 'join' }
	| { readonly kind: 'queue' }
	| { readonly kind: 'refuse'; readonly refusal: 'deleted' | 'flush-skipped' | 'quiesce-skipped' }

/** What to do with `request`, given the recorded state and the flight in progress (if any). */
export function decideTransition(
	state: WorkspaceState,
	flight: TransitionRequest | undefined,
	request: TransitionRequest,
): TransitionDecision {
	if (flight !== undefined) {
		if (flight.verb !== request.verb || flight.epoch !== request.epoch) return { kind: 'queue' }
		if (flight.verb === 'suspend' && request.verb === 'suspend') {
			// The flight's patch goes over a guest nothing stopped (or flushed): no joiner changes that.
			if (request.quiesce && !flight.quiesce) return { kind: 'refuse', refusal: 'quiesce-skipped' }
			if (request.flush && !flight.flush) return { kind: 'refuse', refusal: 'flush-skipped' }
		}
		return { kind: 'join' }
	}
	switch (request.verb) {
		case 'suspend':
			if (state === 'deleted') {
				return request.explicit ? { kind: 'refuse', refusal: 'deleted' } : { kind: 'done' }
			}
			return state === 'suspended' ? { kind: 'done' } : { kind: 'start' }
		case 'delete':
			return state === 'deleted' ? { kind: 'done' } : { kind: 'start' }
		case 'resume':
			if (state === 'deleted') return { kind: 'refuse', refusal: 'deleted' }
			return state === 'running' && request.writesEpoch !== true
				? { kind: 'done' }
				: { kind: 'start' }
	}
}

/**
 * How a flight ended. `confirmed`: the cluster reached the verb's state. `unconfirmed`: the
 * request landed (or the session is gone) but the end state was not observed. `not-sent`: nothing
 * reached the cluster, or it was refused.
 */
export type TransitionOutcome = 'confirmed' | 'unconfirmed' | 'not-sent'

/** The recorded state after a flight of `verb` that started in `prior` ended with `outcome`. */
export function stateAfter(
	prior: WorkspaceState,
	verb: TransitionRequest['verb'],
	outcome: TransitionOutcome,
): WorkspaceState {
	if (outcome === 'not-sent') return prior
	switch (verb) {
		case 'suspend':
			return outcome === 'confirmed' ? 'suspended' : 'detached'
		case 'delete':
			// The session was torn down before the DELETE; a confirmed suspension stays confirmed.
			if (outcome === 'confirmed') return 'deleted'
			return prior === 'suspended' ? 'suspended' : 'detached'
		case 'resume':
			return outcome === 'confirmed' ? 'running' : prior
	}
}

/** Data-plane calls are admitted only on a bound session with no transition in flight. */
export function admits(state: WorkspaceState, flight: TransitionRequest | undefined): boolean {
	return state === 'running' && flight === undefined
}

/** What a flight's body reports: how it ended, and the error to rethrow when it failed. */
export interface FlightResult {
	readonly outcome: TransitionOutcome
	readonly error?: unknown
}

interface Flight {
	readonly request: TransitionRequest
	readonly done: Promise<void>
}

/** Thrown for a `refuse` decision; the handle maps it to the named error. */
export class TransitionRefusal extends Error {
	readonly refusal: 'deleted' | 'flush-skipped' | 'quiesce-skipped'

	constructor(refusal: 'deleted' | 'flush-skipped' | 'quiesce-skipped') {
		super(`transition refused: ${refusal}`)
		this.refusal = refusal
	}
}

export class WorkspaceTransitions {
	#state: WorkspaceState
	#flight: Flight | undefined

	constructor(initial: WorkspaceState) {
		this.#state = initial
	}

	get state(): WorkspaceState {
		return this.#state
	}

	get flight(): TransitionRequest | undefined {
		return this.#flight?.request
	}

	get admitting(): boolean {
		return admits(this.#state, this.#flight?.request)
	}

	/**
	 * Records a suspension another process performed (a failed call or `refresh()` read the object
	 * as `Suspended`): a running handle with no flight becomes `detached` — unconfirmed, so a
	 * `suspend()` still patches and waits, and `resume()` is the way back. Resolves whether it was
	 * recorded.
	 */
	adoptSuspension(): boolean {
		if (this.#state !== 'running' || this.#flight !== undefined) return false
		this.#state = 'detached'
		return true
	}

	/**
	 * Runs `request` by the rules: returns at once when already satisfied, joins or queues behind
	 * the flight in progress, or starts a flight running `body` under `signal`.
	 */
	async run(
		request: TransitionRequest,
		signal: AbortSignal | undefined,
		body: (signal: AbortSignal | undefined) => Promise<FlightResult>,
	): Promise<void> {
		for (;;) {
			signal?.throwIfAborted()
			const current = this.#flight
			const decision = decideTransition(this.#state, current?.request, request)
			switch (decision.kind) {
				case 'done':
					return
				case 'refuse':
					throw new TransitionRefusal(decision.refusal)
				case 'join':
					if (current) return raceSignal(current.done, signal)
					continue
				case 'queue':
					if (current)
						await raceSignal(
							current.done.catch(() => undefined),
							signal,
						)
					continue
				case 'start':
					return this.#start(request, signal, body)
			}
		}
	}

	#start(
		request: TransitionRequest,
		signal: AbortSignal | undefined,
		body: (signal: AbortSignal | undefined) => Promise<FlightResult>,
	): Promise<void> {
		const prior = this.#state
		const done = (async () => {
			let result: FlightResult
			try {
				result = await body(signal)
			} catch (error) {
				// A body that threw reports nothing: nothing is recorded.
				result = { outcome: 'not-sent', error }
			}
			this.#state = stateAfter(prior, request.verb, result.outcome)
			if (result.error !== undefined) throw result.error
		})()
		const flight: Flight = {
			request,
			done: done.finally(() => {
				if (this.#flight === flight) this.#flight = undefined
			}),
		}
		this.#flight = flight
		// Joiners read `flight.done`; an unobserved rejection of the settled copy is not a crash.
		flight.done.catch(() => undefined)
		return flight.done
	}
}
