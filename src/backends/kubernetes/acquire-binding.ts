/**
 * The bind step of an acquire: the created object watched since its POST was sent (and
 * polled for the rest of the one budget when the watch cannot serve), each read judged by the same
 * judge; past the budget one pod read names capacity or an image pull before the plain not-ready.
 */
import {
	KubernetesAcquireError,
	KubernetesClaimUnboundError,
	ReadinessPollTimeout,
} from './acquire-errors.js'
import { readBoundPod } from './acquire-pod.js'
import {
	ACQUIRE_CLEANUP_TIMEOUT_MS,
	type AcquireRun,
	type BoundPod,
	type CreatedObject,
	classifyAcquireFailure,
} from './acquire-run.js'
import { type KubernetesObject, kubernetesPaths } from './kubernetes-objects.js'
import { KubernetesPodLabelsRejectedError } from './network/network-errors.js'
import {
	apiFailureShape,
	boundSandboxName,
	diagnosePod,
	evaluateClaimReadiness,
	evaluateSandboxReadiness,
	nextPollDelayMs,
	type ReadinessVerdict,
} from './readiness.js'
import { type Judgement, pollUntil } from './readiness-poll.js'
import { watchUntil } from './readiness-watch.js'

/** The controller refused a claim for its metadata: what was asked for rides as the cause. */
const METADATA_REFUSAL = 'InvalidMetadata'

function judged(
	verdict: ReadinessVerdict,
	objectName: string,
	requestedPodLabels: Readonly<Record<string, string>> | undefined,
	profileLabelKey: string | undefined,
): Judgement<string> {
	switch (verdict.state) {
		case 'ready':
			return { done: true, value: verdict.sandboxName }
		case 'pending':
			return { done: false, observed: verdict.observed }
		case 'rejected':
			throw new KubernetesAcquireError('claim-rejected', {
				controllerReason: verdict.controllerReason,
				controllerMessage: verdict.controllerMessage,
				objectName,
				...(verdict.controllerReason === METADATA_REFUSAL && requestedPodLabels !== undefined
					? { cause: new KubernetesPodLabelsRejectedError(requestedPodLabels, profileLabelKey) }
					: {}),
			})
		case 'ready-without-sandbox':
			throw new KubernetesClaimUnboundError(objectName)
	}
}

/** A throttled watch's `Retry-After`, honoured before the poll's first read; else none. */
function retryAfterOf(cause: unknown): number {
	return nextPollDelayMs(0, apiFailureShape(cause))
}

/**
 * Waits for the object to bind on the acquire's budget, then reads the bound pod. `onBound` hears
 * the bound object's name and last read before that pod read is sent (work may start on a guess).
 */
export async function waitForBoundPod(
	run: AcquireRun,
	object: CreatedObject,
	onBound?: (sandboxName: string, bound: KubernetesObject) => void,
): Promise<BoundPod> {
	const { api, config, signal } = run
	const budget = {
		deadlineMs: run.deadlineMs,
		intervalMs: config.readyPollIntervalMs,
		now: run.now,
		...(signal ? { signal } : {}),
	}
	const evaluate = object.kind === 'claim' ? evaluateClaimReadiness : evaluateSandboxReadiness
	const subject = `${object.kind === 'claim' ? 'SandboxClaim' : 'Sandbox'} ${object.name}`
	// A cold-started claim's Sandbox is named like the claim; a bound one names it in status.
	let podName = object.name
	let lastRead: KubernetesObject | undefined
	const judge = (read: KubernetesObject): Judgement<string> => {
		lastRead = read
		if (object.kind === 'claim') podName = boundSandboxName(read) ?? podName
		return judged(
			evaluate(read),
			object.name,
			object.kind === 'claim' ? run.podLabels : undefined,
			config.egress?.profile?.key,
		)
	}
	// Watched since the create; polled for the rest of the budget when it cannot be.
	const watched = await watchUntil(object.watch, object.uid, judge, budget)
	const outcome =
		watched.kind === 'fallback'
			? await pollUntil(
					subject,
					(readSignal) => api.get(object.path, { signal: readSignal }),
					judge,
					{
						...budget,
						firstReadAfterMs: retryAfterOf(watched.cause),
					},
				)
			: watched
	if (outcome.kind !== 'timeout') {
		if (onBound && lastRead) onBound(outcome.value, lastRead)
		return readBoundPod(run, outcome.value, object)
	}
	// One pod read after the budget, before the cleanup: the pod condition decides.
	const diagnosis = await diagnose(run, podName)
	if (diagnosis) {
		throw new KubernetesAcquireError(diagnosis.reason, {
			cause: new ReadinessPollTimeout(object.name, config.readyTimeoutMs, diagnosis.detail),
			objectName: object.name,
		})
	}
	if (outcome.standingFailure !== undefined) {
		const classified = classifyAcquireFailure(outcome.standingFailure, object.name)
		if (classified instanceof KubernetesAcquireError) throw classified
	}
	throw new KubernetesAcquireError('not-ready', {
		cause: new ReadinessPollTimeout(subject, config.readyTimeoutMs, outcome.lastObserved),
		objectName: object.name,
	})
}

async function diagnose(
	run: AcquireRun,
	podName: string,
): Promise<{ reason: 'capacity' | 'image-pull'; detail: string } | undefined> {
	try {
		const pod = await run.api.get(kubernetesPaths.pod(run.config.namespace, podName), {
			signal: AbortSignal.timeout(ACQUIRE_CLEANUP_TIMEOUT_MS),
		})
		return diagnosePod(pod)
	} catch {
		return undefined
	}
}
