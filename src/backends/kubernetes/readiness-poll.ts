/**
 * The I/O half of readiness (rules in readiness.ts): read, judge, wait, repeat — on ONE clock. A
 * read that fails with a connect error, a timeout, a 429 or a 5xx is repeated inside the budget,
 * honouring `Retry-After`; any other failure ends the poll at once and travels to the caller as
 * itself. Each read is also cut at the budget's end, so no retry extends it. A failure the poll
 * later recovered from is forgotten: only a failure that was still standing when the budget ran
 * out is reported.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { ReadinessReadCutError } from './acquire-errors.js'
import type { KubernetesObject } from './kubernetes-objects.js'
import { apiFailureShape, isRetryableReadFailure, nextPollDelayMs } from './readiness.js'

export type Judgement<T> =
	| { readonly done: true; readonly value: T }
	| { readonly done: false; readonly observed: string }

export type PollOutcome<T> =
	| { readonly kind: 'done'; readonly value: T }
	| {
			readonly kind: 'timeout'
			readonly lastObserved?: string
			/** The read failure still standing at the end (none when the last read succeeded). */
			readonly standingFailure?: unknown
	  }

export interface PollBudget {
	/** `performance.now()`-style deadline in ms, from `now()`. */
	readonly deadlineMs: number
	readonly intervalMs: number
	readonly signal?: AbortSignal
	readonly now: () => number
	/** Wait this long before the first read (a refused watch's `Retry-After`). */
	readonly firstReadAfterMs?: number
}

/** Polls `read` until `judge` says done, a non-retryable failure, an abort, or the budget's end. */
export async function pollUntil<T>(
	what: string,
	read: (signal: AbortSignal) => Promise<KubernetesObject>,
	judge: (object: KubernetesObject) => Judgement<T>,
	budget: PollBudget,
): Promise<PollOutcome<T>> {
	let lastObserved: string | undefined
	let standingFailure: unknown
	if (budget.firstReadAfterMs !== undefined && budget.firstReadAfterMs > 0) {
		const left = budget.deadlineMs - budget.now()
		if (left <= 0) return timeout()
		await pause(Math.min(budget.firstReadAfterMs, left))
	}
	for (;;) {
		budget.signal?.throwIfAborted()
		const remaining = budget.deadlineMs - budget.now()
		if (remaining <= 0) return timeout()
		const cut = AbortSignal.timeout(Math.max(1, Math.ceil(remaining)))
		const signal = budget.signal ? AbortSignal.any([budget.signal, cut]) : cut
		let delay = budget.intervalMs
		try {
			const object = await read(signal)
			standingFailure = undefined
			const verdict = judge(object)
			if (verdict.done) return { kind: 'done', value: verdict.value }
			lastObserved = verdict.observed
		} catch (error) {
			budget.signal?.throwIfAborted()
			if (cut.aborted) {
				standingFailure = new ReadinessReadCutError(what)
				return timeout()
			}
			const shape = apiFailureShape(error)
			if (!isRetryableReadFailure(shape)) throw error
			standingFailure = error
			delay = nextPollDelayMs(budget.intervalMs, shape)
		}
		const left = budget.deadlineMs - budget.now()
		if (left <= 0) return timeout()
		await pause(Math.min(delay, left))
	}

	async function pause(ms: number): Promise<void> {
		// An abort rejects with the caller's own reason, as every other step of the poll does.
		await sleep(ms, undefined, { signal: budget.signal }).catch(() =>
			budget.signal?.throwIfAborted(),
		)
	}

	function timeout(): PollOutcome<T> {
		return {
			kind: 'timeout',
			...(lastObserved === undefined ? {} : { lastObserved }),
			...(standingFailure === undefined ? {} : { standingFailure }),
		}
	}
}
