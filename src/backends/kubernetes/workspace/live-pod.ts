/**
 * Which pod a workspace may bind to, as pure rules. A pod is live when it carries no
 * `deletionTimestamp` and its phase is not terminal; after a landed suspend patch it must also not
 * be the pod that patch retired (a GET by name can still answer with the outgoing pod). When no
 * landed patch retired anything, any live pod is accepted — nobody asked for a replacement.
 */
import type { KubernetesObject } from '../kubernetes-objects.js'

const TERMINAL_PHASES: readonly string[] = ['Succeeded', 'Failed']

export function podPhase(pod: KubernetesObject): string | undefined {
	const phase = pod.status?.phase
	return typeof phase === 'string' ? phase : undefined
}

/** True once the pod can no longer run anything: being deleted does NOT count (it still writes). */
export function isPodStopped(pod: KubernetesObject): boolean {
	const phase = podPhase(pod)
	return phase !== undefined && TERMINAL_PHASES.includes(phase)
}

export type PodLiveness =
	| { readonly live: true; readonly uid: string }
	| { readonly live: false; readonly observed: string; readonly terminatingUid?: string }

/** Whether `pod` is one to bind to, given the uid the last landed suspend patch retired. */
export function judgeLivePod(pod: KubernetesObject, retiredUid: string | undefined): PodLiveness {
	const uid = pod.metadata.uid
	const name = pod.metadata.name ?? '(unnamed)'
	if (typeof uid !== 'string' || uid === '')
		return { live: false, observed: `pod ${name} has no uid` }
	if (pod.metadata.deletionTimestamp !== undefined) {
		return { live: false, observed: `pod ${name} (uid ${uid}) is terminating`, terminatingUid: uid }
	}
	const phase = podPhase(pod)
	if (phase !== undefined && TERMINAL_PHASES.includes(phase)) {
		return { live: false, observed: `pod ${name} (uid ${uid}) is ${phase}` }
	}
	if (retiredUid !== undefined && uid === retiredUid) {
		return { live: false, observed: `pod ${name} is still the retired uid ${uid}` }
	}
	return { live: true, uid }
}
