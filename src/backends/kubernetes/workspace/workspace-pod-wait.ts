/**
 * The two pod waits of a workspace, on the readiness poll (readiness-poll.ts) and one budget
 * each: until a live pod to bind to exists (live-pod.ts; pod-ip mode also waits for its IP), and
 * until the pod a suspend retired is gone or terminal — never the `Suspended` condition, never a
 * `deletionTimestamp`, since a deleting guest still writes to the disk.
 */
import { ReadinessPollTimeout } from '../acquire-errors.js'
import { KubernetesApiError } from '../api/api-errors.js'
import type { KubernetesApiPort } from '../kubernetes-api-port.js'
import type { ResolvedKubernetesBackendConfig } from '../kubernetes-backend-config.js'
import { type KubernetesObject, kubernetesPaths } from '../kubernetes-objects.js'
import { podAddress } from '../readiness.js'
import { type Judgement, pollUntil } from '../readiness-poll.js'
import { isPodStopped, judgeLivePod } from './live-pod.js'
import { KubernetesWorkspaceSuspendTimeoutError } from './workspace-errors.js'

export interface PodWaitContext {
	readonly api: KubernetesApiPort
	readonly config: ResolvedKubernetesBackendConfig
	readonly now: () => number
}

export interface BoundPod {
	readonly podName: string
	readonly podUid: string
	readonly host: string
}

/** Stands for "the pod does not exist" in a poll that reads it by name. */
const NO_POD: KubernetesObject = Object.freeze({ metadata: Object.freeze({}) })

function readPodOrNone(
	context: PodWaitContext,
	podName: string,
): (signal: AbortSignal) => Promise<KubernetesObject> {
	return async (signal) => {
		try {
			return await context.api.get(kubernetesPaths.pod(context.config.namespace, podName), {
				signal,
			})
		} catch (error) {
			// The client answers a GET of a missing object with its 404 (or 410), not as "already gone".
			if (error instanceof KubernetesApiError && (error.status === 404 || error.status === 410)) {
				return NO_POD
			}
			throw error
		}
	}
}

/** The address a session dials: the Service FQDN, or (pod-ip) the pod's IP once it has one. */
function addressOf(
	context: PodWaitContext,
	podName: string,
	pod: KubernetesObject,
): string | undefined {
	if (context.config.agentAddress === 'service') {
		return `${podName}.${context.config.namespace}.svc.cluster.local`
	}
	return podAddress(pod)
}

/**
 * Polls the pod `podName` until it is live, not `retiredUid`, and (pod-ip) has an IP. Runs out
 * as `ReadinessPollTimeout` naming what the last read showed — the terminating pod, when that is
 * what stood in the way.
 */
export async function waitForLivePod(
	context: PodWaitContext,
	podName: string,
	options: {
		readonly retiredUid?: string
		readonly deadlineMs: number
		readonly signal?: AbortSignal
		/** A pod that cannot be read (missing, no uid) ends the wait at once (the created path). */
		readonly failFast?: (pod: KubernetesObject) => void
	},
): Promise<BoundPod> {
	const judge = (pod: KubernetesObject): Judgement<BoundPod> => {
		if (pod === NO_POD) return { done: false, observed: `pod ${podName} does not exist yet` }
		options.failFast?.(pod)
		const liveness = judgeLivePod(pod, options.retiredUid)
		if (!liveness.live) return { done: false, observed: liveness.observed }
		const host = addressOf(context, podName, pod)
		if (host === undefined) return { done: false, observed: `pod ${podName} has no IP yet` }
		return { done: true, value: { podName, podUid: liveness.uid, host } }
	}
	const outcome = await pollUntil(`pod ${podName}`, readPodOrNone(context, podName), judge, {
		deadlineMs: options.deadlineMs,
		intervalMs: context.config.readyPollIntervalMs,
		now: context.now,
		...(options.signal ? { signal: options.signal } : {}),
	})
	if (outcome.kind === 'done') return outcome.value
	if (outcome.standingFailure !== undefined) throw outcome.standingFailure
	throw new ReadinessPollTimeout(
		`pod ${podName}`,
		context.config.readyTimeoutMs,
		outcome.lastObserved,
	)
}

/**
 * Polls until the pod `retiredUid` named is gone (404, or a pod of another uid under the name) or
 * terminal; `KubernetesWorkspaceSuspendTimeoutError` when it outlives the budget.
 */
export async function waitForPodStopped(
	context: PodWaitContext,
	workspaceName: string,
	podName: string,
	retiredUid: string | undefined,
	signal: AbortSignal | undefined,
): Promise<void> {
	const judge = (pod: KubernetesObject): Judgement<true> => {
		if (pod === NO_POD) return { done: true, value: true }
		if (retiredUid !== undefined && pod.metadata.uid !== retiredUid)
			return { done: true, value: true }
		if (isPodStopped(pod)) return { done: true, value: true }
		const deleting = pod.metadata.deletionTimestamp === undefined ? '' : ' (terminating)'
		return {
			done: false,
			observed: `pod ${podName} uid ${pod.metadata.uid ?? '?'} still present${deleting}`,
		}
	}
	const outcome = await pollUntil(`pod ${podName}`, readPodOrNone(context, podName), judge, {
		deadlineMs: context.now() + context.config.readyTimeoutMs,
		intervalMs: context.config.readyPollIntervalMs,
		now: context.now,
		...(signal ? { signal } : {}),
	})
	if (outcome.kind === 'done') return
	throw new KubernetesWorkspaceSuspendTimeoutError(
		workspaceName,
		podName,
		context.config.readyTimeoutMs,
		outcome.lastObserved,
	)
}
