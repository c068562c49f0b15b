/**
 * Readiness by watching instead of polling: one watch on the object being created, opened beside
 * its create (no version: the server starts from the current state, so a bind that lands before
 * the watch opens arrives as the first event), judged event by event on the same budget and with
 * the same judge as the poll (readiness-poll.ts), once the create has answered. Whenever the watch
 * cannot serve — no `watch` on the port, the Role lacks the verb, the server ends the stream early
 * or sends an `ERROR`, the object is deleted, the connection is cut — the outcome is `fallback`
 * and the caller polls the rest of the budget: a watch may only make readiness faster, never
 * change what it decides.
 */

import type { KubernetesWatchEvent } from './api/watch-events.js'
import type { KubernetesApiPort } from './kubernetes-api-port.js'
import type { KubernetesObject } from './kubernetes-objects.js'
import type { Judgement, PollBudget, PollOutcome } from './readiness-poll.js'

export type WatchOutcome<T> =
	| PollOutcome<T>
	| { readonly kind: 'fallback'; readonly cause?: unknown }

type WatchStep = IteratorResult<KubernetesWatchEvent<KubernetesObject>>

/** A watch opened before its object's create answered; `watchUntil` reads it, `close` ends it. */
export interface OpenedWatch {
	readonly name: string
	/** The first read, started at the opening so the request is sent beside the create. */
	readonly first: Promise<WatchStep>
	readonly events: AsyncIterator<KubernetesWatchEvent<KubernetesObject>>
	/** Fires at the budget's end. */
	readonly cut: AbortSignal
	close(): void
}

/** Opens the watch of one object of the collection by name; none when the port cannot watch. */
export function openWatch(
	api: KubernetesApiPort,
	collectionPath: string,
	name: string,
	budget: Pick<PollBudget, 'deadlineMs' | 'now' | 'signal'>,
): OpenedWatch | undefined {
	const remaining = budget.deadlineMs - budget.now()
	if (api.watch === undefined || remaining <= 0 || budget.signal?.aborted) return undefined
	const cut = AbortSignal.timeout(Math.max(1, Math.ceil(remaining)))
	const stop = new AbortController()
	const signal = AbortSignal.any([stop.signal, cut, ...(budget.signal ? [budget.signal] : [])])
	const stream = api.watch(collectionPath, {
		fieldSelector: `metadata.name=${name}`,
		timeoutSeconds: Math.max(1, Math.ceil(remaining / 1000)),
		signal,
	})
	const events = stream[Symbol.asyncIterator]()
	const first = events.next()
	// Read (or dropped) later; a failure before then must not count as unhandled.
	first.catch(() => undefined)
	return {
		name,
		first,
		events,
		cut,
		close: () => {
			stop.abort()
			events.return?.().catch(() => undefined)
		},
	}
}

/** Marks an error the judge threw, so it travels as itself instead of causing a fallback. */
class JudgedError {
	constructor(readonly error: unknown) {}
}

/**
 * Judges the opened watch's events until done, the budget's end, or a fallback; closes it. With
 * `uid` (the create's answer), an event of another object of the same name is passed over.
 */
export async function watchUntil<T>(
	watch: OpenedWatch | undefined,
	uid: string | undefined,
	judge: (object: KubernetesObject) => Judgement<T>,
	budget: PollBudget,
): Promise<WatchOutcome<T>> {
	if (watch === undefined) return { kind: 'fallback' }
	let lastObserved: string | undefined
	try {
		budget.signal?.throwIfAborted()
		for (let step = await watch.first; !step.done; step = await watch.events.next()) {
			const event = step.value
			if (event.type === 'BOOKMARK') continue
			if (event.type !== 'ADDED' && event.type !== 'MODIFIED') return { kind: 'fallback' }
			const { name, uid: eventUid } = event.object.metadata ?? {}
			if (name !== watch.name || (uid !== undefined && eventUid !== uid)) continue
			let verdict: Judgement<T>
			try {
				verdict = judge(event.object)
			} catch (error) {
				throw new JudgedError(error)
			}
			if (verdict.done) return { kind: 'done', value: verdict.value }
			lastObserved = verdict.observed
		}
		return { kind: 'fallback' }
	} catch (error) {
		if (error instanceof JudgedError) throw error.error
		budget.signal?.throwIfAborted()
		if (watch.cut.aborted) {
			return { kind: 'timeout', ...(lastObserved === undefined ? {} : { lastObserved }) }
		}
		return { kind: 'fallback', cause: error }
	} finally {
		watch.close()
	}
}
