/**
 * Why a Kubernetes acquire failed. `KubernetesAcquireError.reason` is one of seven names, with
 * `retryable`, the original failure as `cause`, and — for a claim the controller refused — the
 * controller's own condition reason and message. `ReadinessPollTimeout` is the cause of
 * `not-ready` (and what a future workspace lifecycle throws directly), `ReadinessReadCutError` the
 * cause of an `api-timeout` the budget cut. What the taxonomy cannot honestly name travels as
 * itself: `KubernetesClaimUnboundError`, `KubernetesPodUnusableError`,
 * `KubernetesTemplateInvalidError` (and the API client's own errors, `api/api-errors.ts`).
 */
import { SandboxError } from '../../contract/errors.js'

export type KubernetesAcquireFailureReason =
	| 'api-unreachable'
	| 'api-timeout'
	| 'forbidden'
	| 'claim-rejected'
	| 'capacity'
	| 'image-pull'
	| 'not-ready'

/** Claim `Ready` reasons that mean decided, not not-yet: the acquire ends on the first read. */
export const TERMINAL_CLAIM_REASONS: readonly string[] = Object.freeze([
	'WarmPoolNotFound',
	'TemplateNotFound',
	'InvalidMetadata',
	'EnvVarsInjectionRejected',
])

const RETRYABLE: Readonly<Record<KubernetesAcquireFailureReason, boolean>> = {
	'api-unreachable': true,
	'api-timeout': true,
	forbidden: false,
	'claim-rejected': false,
	capacity: true,
	'image-pull': false,
	'not-ready': true,
}

const SUMMARY: Readonly<Record<KubernetesAcquireFailureReason, string>> = {
	'api-unreachable': 'the Kubernetes API server could not be reached',
	'api-timeout': 'the Kubernetes API server did not answer within apiRequestTimeoutMs',
	forbidden: 'the credentials are not allowed to do this (RBAC)',
	'claim-rejected': 'the controller refused the claim',
	capacity: 'the pod could not be scheduled (no node capacity)',
	'image-pull': 'the pod image could not be pulled',
	'not-ready': 'the sandbox did not become ready within readyTimeoutMs',
}

export interface KubernetesAcquireErrorFields {
	readonly cause?: unknown
	readonly controllerReason?: string
	readonly controllerMessage?: string
	/** The object the failed acquire created (already deleted again), if any. */
	readonly objectName?: string
}

export class KubernetesAcquireError extends SandboxError<KubernetesAcquireFailureReason> {
	override readonly name = 'KubernetesAcquireError'
	readonly controllerReason?: string
	readonly controllerMessage?: string
	readonly objectName?: string

	constructor(reason: KubernetesAcquireFailureReason, fields: KubernetesAcquireErrorFields = {}) {
		const controller =
			fields.controllerReason === undefined
				? ''
				: ` (${fields.controllerReason}${fields.controllerMessage ? `: ${fields.controllerMessage}` : ''})`
		const cause = fields.cause instanceof Error ? `: ${fields.cause.message}` : ''
		super(
			`kubernetes acquire failed (${reason}): ${SUMMARY[reason]}${controller}${cause}`,
			reason,
			{
				cause: fields.cause,
				retryable: RETRYABLE[reason],
			},
		)
		if (fields.controllerReason !== undefined) this.controllerReason = fields.controllerReason
		if (fields.controllerMessage !== undefined) this.controllerMessage = fields.controllerMessage
		if (fields.objectName !== undefined) this.objectName = fields.objectName
	}
}

/** The readiness budget ran out with nothing more specific to report. */
export class ReadinessPollTimeout extends SandboxError<'ready-timeout'> {
	override readonly name = 'ReadinessPollTimeout'
	readonly timeoutMs: number
	/** What the last read showed (e.g. `DependenciesNotReady: Pod exists with phase: Pending`). */
	readonly lastObserved?: string

	constructor(what: string, timeoutMs: number, lastObserved?: string) {
		super(
			`${what} was not ready within ${timeoutMs} ms${lastObserved ? ` (last seen: ${lastObserved})` : ''}`,
			'ready-timeout',
			{ retryable: true },
		)
		this.timeoutMs = timeoutMs
		if (lastObserved !== undefined) this.lastObserved = lastObserved
	}
}

/**
 * A read the readiness budget cut short: the server had not answered inside it. The acquire
 * reports it as `api-timeout`, with this as the cause.
 */
export class ReadinessReadCutError extends SandboxError<'readiness-budget'> {
	override readonly name = 'ReadinessReadCutError'

	constructor(what: string) {
		super(`${what}: no answer before the readiness budget ran out`, 'readiness-budget', {
			retryable: true,
		})
	}
}

/** A claim the controller reported Ready without naming a sandbox. */
export class KubernetesClaimUnboundError extends SandboxError<'claim-unbound'> {
	override readonly name = 'KubernetesClaimUnboundError'
	readonly claimName: string

	constructor(claimName: string) {
		super(
			`SandboxClaim ${claimName} reported Ready but named no sandbox in status.sandbox`,
			'claim-unbound',
		)
		this.claimName = claimName
	}
}

/** The bound pod had no uid (or its IP never arrived): the acquire cannot reach the guest. */
export class KubernetesPodUnusableError extends SandboxError<'pod-unusable'> {
	override readonly name = 'KubernetesPodUnusableError'
	readonly podName: string

	constructor(podName: string, detail: string) {
		super(`pod ${podName}: ${detail}`, 'pod-unusable')
		this.podName = podName
	}
}

/** A template whose `spec.podTemplate` is missing or not an object. */
export class KubernetesTemplateInvalidError extends SandboxError<'template-invalid'> {
	override readonly name = 'KubernetesTemplateInvalidError'
	readonly templateName: string

	constructor(templateName: string, detail: string) {
		super(`SandboxTemplate ${templateName}: ${detail}`, 'template-invalid')
		this.templateName = templateName
	}
}
