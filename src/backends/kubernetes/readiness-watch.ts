/**
 * Readiness by watching instead of polling: one watch on the object just created, from the
 * version its create returned, judged event by event on the same budget and with the same judge
 * as the poll (readiness-poll.ts). Whenever the watch cannot serve — no `watch` on the port, the
 * Role lacks the verb, the server ends the stream early or sends an `ERROR`, the object is
 * deleted, the connection is cut — the outcome is `fallback` and the caller polls the rest of the
 * budget: a watch may only make readiness faster, never change what it decides.
 */

import type { KubernetesApiPort } from './kubernetes-api-port.js'
import type { KubernetesObject } from './kubernetes-objects.js'
import type { Judgement, PollBudget, PollOutcome } from './readiness-poll.js'

export type WatchOutcome<T> =
	| PollOutcome<T>
	| { readonly kind: 'fallback'; readonly cause?: unknown }

export interface WatchedObject {
	/** The collection the object lives in. */
	readonly collectionPath: string
	readonly name: string
	/** `metadata.resourceVersion` the create returned; none: nothing to watch from. */
	readonly resourceVersion: string | undefined
}

/** Marks an error the judge threw, so it travels as itself instead of causing a fallback. */
class JudgedError {
	constructor(readonly error: unknown) {}
}

export async function watchUntil<T>(
	api: KubernetesApiPort,
	object: WatchedObject,
	judge: (object: KubernetesObject) => Judgement<T>,
	budget: PollBudget,
): Promise<WatchOutcome<T>> {
	if (api.watch === undefined || object.resourceVersion === undefined) return { kind: 'fallback' }
	budget.signal?.throwIfAborted()
	const remaining = budget.deadlineMs - budget.now()
	if (remaining <= 0) return { kind: 'fallback' }
	const cut = AbortSignal.timeout(Math.max(1, Math.ceil(remaining)))
	const signal = budget.signal ? AbortSignal.any([budget.signal, cut]) : cut
	let lastObserved: string | undefined
	try {
		const events = api.watch(object.collectionPath, {
			fieldSelector: `metadata.name=${object.name}`,
			resourceVersion: object.resourceVersion,
			timeoutSeconds: Math.max(1, Math.ceil(remaining / 1000)),
			signal,
		})
		for await (const event of events) {
			if (event.type === 'BOOKMARK') continue
			if (event.type !== 'ADDED' && event.type !== 'MODIFIED') return { kind: 'fallback' }
			if (event.object.metadata?.name !== object.name) continue
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
		if (cut.aborted) {
			return { kind: 'timeout', ...(lastObserved === undefined ? {} : { lastObserved }) }
		}
		return { kind: 'fallback', cause: error }
	}
}
