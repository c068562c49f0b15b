/**
 * Where one remote `exec()` spent its wall time, measured where each phase happens: the dials in
 * the transport (reported per request), the reserve round trip, the execute stream and the
 * controller's wind-down after it. An attribution, not a partition: `reserveMs` and `executeMs`
 * each include their own dial, which `dialMs` also counts. Only durations: never a command, its
 * arguments, its output or a credential.
 */
import { performance } from 'node:perf_hooks'

/** Where one `exec()` spent its time; durations in milliseconds, nothing else. */
export interface RemoteExecutionTiming {
	/** Establishing this call's connections (reserve, execute, cancel attempts), retries included. */
	readonly dialMs: number
	/** The `reserve-execution` round trip, dial included; 0 when none was sent. */
	readonly reserveMs: number
	/** From the `execute` request until its stream settled, dial included; 0 when it never ran. */
	readonly executeMs: number
	/**
	 * From the last peer phase settling until `exec()` settled: the controller's own wind-down
	 * (timers, a cancellation it had to confirm). 0 when the execute stream never settled.
	 */
	readonly drainMs: number
}

/** The marks of one `exec()`; `finish()` turns them into a `RemoteExecutionTiming`. */
export class ExecutionClock {
	#dialMs = 0
	#reserveStart: number | undefined
	#reserveEnd: number | undefined
	#executeStart: number | undefined
	#executeEnd: number | undefined

	/** Given to the transport with each request of this call. */
	readonly onDialed = (durationMs: number): void => {
		this.#dialMs += durationMs
	}

	reserveStarted(): void {
		this.#reserveStart = performance.now()
	}

	reserveEnded(): void {
		this.#reserveEnd = performance.now()
	}

	executeStarted(): void {
		this.#executeStart = performance.now()
	}

	executeEnded(): void {
		this.#executeEnd ??= performance.now()
	}

	finish(): RemoteExecutionTiming {
		const end = performance.now()
		const span = (from: number | undefined, to: number | undefined) =>
			from === undefined ? 0 : Math.max(0, (to ?? end) - from)
		const lastPeerPhaseEnd = this.#executeStart === undefined ? this.#reserveEnd : this.#executeEnd
		return {
			dialMs: this.#dialMs,
			reserveMs: span(this.#reserveStart, this.#reserveEnd),
			executeMs: span(this.#executeStart, this.#executeEnd),
			drainMs: lastPeerPhaseEnd === undefined ? 0 : Math.max(0, end - lastPeerPhaseEnd),
		}
	}
}
