/**
 * What a workspace call the guest refused as `unauthorized` leads to, once the `Sandbox` and its
 * pod were re-read (pure). The guest checks the token before dispatch, so the refused request ran
 * nothing and may be sent once more — but only to the same object: the same `sandboxUid` with a
 * live pod of another uid is a replaced pod to follow; the same pod uid leaves the refusal
 * standing; another object under the name (or none) is a different workspace with an empty disk,
 * never followed; and an object somebody suspended is a suspension the handle adopts.
 */
import type { KubernetesObject } from '../kubernetes-objects.js'
import { isPodStopped } from './live-pod.js'

export type RefusedCallDecision =
	| { readonly kind: 'rebind'; readonly podUid: string; readonly host: string }
	/** The original refusal stands: the same pod, or no live pod with an address yet. */
	| { readonly kind: 'unchanged'; readonly observed: string }
	| { readonly kind: 'replaced'; readonly observedSandboxUid?: string }
	| { readonly kind: 'suspended' }

export interface RefusedCallObservation {
	/** The uid this handle is bound to. */
	readonly expectedSandboxUid: string
	/** The pod uid the transport carries as its token. */
	readonly currentPodUid: string
	/** The re-read Sandbox; undefined when none exists (404). */
	readonly sandbox: KubernetesObject | undefined
	/** The re-read pod; undefined when none exists or it was not read. */
	readonly pod: KubernetesObject | undefined
	/** Where the agent of `pod` is dialed (its IP, or the Service FQDN that outlives pods). */
	readonly addressOf: (pod: KubernetesObject) => string | undefined
}

/** True for a pod that can serve: not being deleted, not in a terminal phase. */
export function isServingPod(pod: KubernetesObject): boolean {
	return pod.metadata.deletionTimestamp === undefined && !isPodStopped(pod)
}

export function decideAfterRefusal(observation: RefusedCallObservation): RefusedCallDecision {
	const { sandbox, pod } = observation
	if (sandbox === undefined) return { kind: 'replaced' }
	const sandboxUid = sandbox.metadata.uid
	if (sandboxUid !== observation.expectedSandboxUid) {
		return typeof sandboxUid === 'string'
			? { kind: 'replaced', observedSandboxUid: sandboxUid }
			: { kind: 'replaced' }
	}
	const mode = (sandbox.spec as { operatingMode?: unknown } | undefined)?.operatingMode
	if (mode === 'Suspended') return { kind: 'suspended' }
	if (pod === undefined) return { kind: 'unchanged', observed: 'no pod under the name' }
	const podUid = pod.metadata.uid
	if (typeof podUid !== 'string' || podUid === '') {
		return { kind: 'unchanged', observed: 'the pod has no uid' }
	}
	if (podUid === observation.currentPodUid) return { kind: 'unchanged', observed: 'the same pod' }
	if (!isServingPod(pod)) return { kind: 'unchanged', observed: `pod ${podUid} is not live` }
	const host = observation.addressOf(pod)
	if (host === undefined) return { kind: 'unchanged', observed: `pod ${podUid} has no address yet` }
	return { kind: 'rebind', podUid, host }
}
