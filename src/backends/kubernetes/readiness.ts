/**
 * Pure readiness rules of an acquire: what one read of the claim (or direct Sandbox) means, how an
 * API failure during the poll is treated (retry inside the budget, or end it), how long to wait
 * before the next read (`Retry-After` may only slow the poll), and what the one diagnostic pod read
 * after the budget says. The I/O loop lives in readiness-poll.ts.
 */
import { type KubernetesAcquireFailureReason, TERMINAL_CLAIM_REASONS } from './acquire-errors.js'
import { KubernetesApiError, KubernetesApiTimeoutError } from './api/api-errors.js'
import type { KubernetesCondition, KubernetesObject } from './kubernetes-objects.js'

export type ReadinessVerdict =
	| { readonly state: 'ready'; readonly sandboxName: string }
	| { readonly state: 'pending'; readonly observed: string }
	| {
			readonly state: 'rejected'
			readonly controllerReason: string
			readonly controllerMessage: string
	  }
	| { readonly state: 'ready-without-sandbox' }

export function conditionOf(
	object: KubernetesObject | undefined,
	type: string,
): KubernetesCondition | undefined {
	const conditions = object?.status?.conditions
	if (!Array.isArray(conditions)) return undefined
	for (const entry of conditions as unknown[]) {
		if (typeof entry !== 'object' || entry === null) continue
		const candidate = entry as Partial<KubernetesCondition>
		if (candidate.type === type && typeof candidate.status === 'string') {
			return candidate as KubernetesCondition
		}
	}
	return undefined
}

function describe(condition: KubernetesCondition | undefined): string {
	if (!condition) return 'no Ready condition yet'
	return `Ready=${condition.status}${condition.reason ? ` ${condition.reason}` : ''}${condition.message ? `: ${condition.message}` : ''}`
}

/** One read of a claim: bound and Ready, refused for good, or not yet. */
export function evaluateClaimReadiness(claim: KubernetesObject): ReadinessVerdict {
	const ready = conditionOf(claim, 'Ready')
	if (ready?.reason !== undefined && TERMINAL_CLAIM_REASONS.includes(ready.reason)) {
		return {
			state: 'rejected',
			controllerReason: ready.reason,
			controllerMessage: ready.message ?? '',
		}
	}
	if (ready?.status !== 'True') return { state: 'pending', observed: describe(ready) }
	const name = boundSandboxName(claim)
	if (name === undefined) return { state: 'ready-without-sandbox' }
	return { state: 'ready', sandboxName: name }
}

/** `status.sandbox.name` of a claim, when the controller has written it. */
export function boundSandboxName(claim: KubernetesObject): string | undefined {
	const sandbox = claim.status?.sandbox
	const name =
		typeof sandbox === 'object' && sandbox !== null
			? (sandbox as { name?: unknown }).name
			: undefined
	return typeof name === 'string' && name !== '' ? name : undefined
}

/** One read of a directly created Sandbox: its own name once Ready. */
export function evaluateSandboxReadiness(sandbox: KubernetesObject): ReadinessVerdict {
	const ready = conditionOf(sandbox, 'Ready')
	if (ready?.status === 'True' && sandbox.metadata.name) {
		return { state: 'ready', sandboxName: sandbox.metadata.name }
	}
	return { state: 'pending', observed: describe(ready) }
}

/** What an API failure is, read from the API client's error fields (api/). */
export type ApiFailureShape =
	| { readonly kind: 'timeout' }
	| { readonly kind: 'connect' }
	| { readonly kind: 'status'; readonly status: number; readonly retryAfterMs?: number }

/** The shape of a failure the API client threw; undefined for anything else. */
export function apiFailureShape(error: unknown): ApiFailureShape | undefined {
	if (error instanceof KubernetesApiTimeoutError) return { kind: 'timeout' }
	if (!(error instanceof KubernetesApiError)) return undefined
	if (error.transport === 'connect') return { kind: 'connect' }
	const { status, retryAfterMs } = error
	if (status === undefined) return undefined
	return retryAfterMs !== undefined && retryAfterMs >= 0
		? { kind: 'status', status, retryAfterMs }
		: { kind: 'status', status }
}

/** A readiness read that failed this way is repeated inside the budget. */
export function isRetryableReadFailure(shape: ApiFailureShape | undefined): boolean {
	if (!shape) return false
	if (shape.kind !== 'status') return true
	return shape.status === 429 || shape.status >= 500
}

/**
 * The acquire reason for an API failure that ended (or outlived) the poll; undefined when the
 * taxonomy cannot honestly name it (a 400 from a webhook, a 404, …): that error travels as itself.
 */
export function acquireReasonForApiFailure(
	shape: ApiFailureShape | undefined,
): KubernetesAcquireFailureReason | undefined {
	if (!shape) return undefined
	if (shape.kind === 'timeout') return 'api-timeout'
	if (shape.kind === 'connect') return 'api-unreachable'
	if (shape.status === 401 || shape.status === 403) return 'forbidden'
	if (shape.status === 429 || shape.status >= 500) return 'api-unreachable'
	return undefined
}

/** Wait before the next read: the interval, lengthened (never shortened) by `Retry-After`. */
export function nextPollDelayMs(intervalMs: number, shape: ApiFailureShape | undefined): number {
	const retryAfter = shape?.kind === 'status' ? (shape.retryAfterMs ?? 0) : 0
	return Math.max(intervalMs, retryAfter)
}

const IMAGE_PULL_REASONS = new Set([
	'ErrImagePull',
	'ImagePullBackOff',
	'InvalidImageName',
	'ErrImageNeverPull',
	'RegistryUnavailable',
])

/** The one diagnostic pod read after the budget: `capacity`, `image-pull`, or nothing to say. */
export function diagnosePod(
	pod: KubernetesObject | undefined,
): { reason: 'capacity' | 'image-pull'; detail: string } | undefined {
	if (!pod) return undefined
	const scheduled = conditionOf(pod, 'PodScheduled')
	if (scheduled?.status === 'False' && scheduled.reason === 'Unschedulable') {
		return { reason: 'capacity', detail: scheduled.message ?? 'Unschedulable' }
	}
	for (const key of ['initContainerStatuses', 'containerStatuses']) {
		const statuses = pod.status?.[key]
		if (!Array.isArray(statuses)) continue
		for (const status of statuses as unknown[]) {
			const waiting = (status as { state?: { waiting?: { reason?: unknown; message?: unknown } } })
				?.state?.waiting
			if (typeof waiting?.reason === 'string' && IMAGE_PULL_REASONS.has(waiting.reason)) {
				const message = typeof waiting.message === 'string' ? `: ${waiting.message}` : ''
				return { reason: 'image-pull', detail: `${waiting.reason}${message}` }
			}
		}
	}
	return undefined
}

/** The bound pod's IP, when it has one and is not being deleted. */
export function podAddress(pod: KubernetesObject): string | undefined {
	if (pod.metadata.deletionTimestamp !== undefined) return undefined
	const ip = pod.status?.podIP
	return typeof ip === 'string' && ip !== '' ? ip : undefined
}
