/**
 * What a provider's sandboxes together may hold of exec output on the host: every running `exec`
 * takes what it keeps from one budget and gives it back once its result is handed out. The
 * per-call `maxOutputBytes` bounds one exec; this bounds them all, so many sandboxes flooding
 * output at once cannot grow the host without bound. An exec the budget cannot serve keeps what
 * it has, drops the rest of that stream and says so (`outputTruncation: 'output-budget'`).
 */

/** 256 MiB: what a provider's execs hold at once unless `execOutputBudgetBytes` says otherwise. */
export const DEFAULT_EXEC_OUTPUT_BUDGET_BYTES = 268_435_456

/** One provider's budget of retained exec output, counted as `ExecOutputCapture` counts. */
export class ExecOutputBudget {
	readonly limitBytes: number
	#held = 0

	constructor(limitBytes: number = DEFAULT_EXEC_OUTPUT_BUDGET_BYTES) {
		this.limitBytes = limitBytes
	}

	/** Output held right now, by every exec drawing on this budget. */
	get heldBytes(): number {
		return this.#held
	}

	/** Takes up to `units`; answers how many were granted (fewer once the budget runs out). */
	take(units: number): number {
		const granted = Math.max(0, Math.min(units, this.limitBytes - this.#held))
		this.#held += granted
		return granted
	}

	/** Gives back `units` taken earlier. */
	give(units: number): void {
		this.#held = Math.max(0, this.#held - units)
	}
}
