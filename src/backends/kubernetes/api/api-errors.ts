/**
 * Every refusal of the Kubernetes API client, one class each. A timeout is its own class and is
 * never an `KubernetesApiError`, so `instanceof` separates "no answer within the bound" from "the
 * API server said no". No message or field ever carries the bearer token: messages are built only
 * from the verb, the path, the status and the API server's own Status text.
 */
import { causeChain, causeCode } from '../../../contract/cause-chain.js'
import { SandboxError } from '../../../contract/errors.js'

/** The HTTP verbs the client sends. */
export type KubernetesHttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

/** `connect`: no HTTP status arrived (refused, reset, TLS); `status`: the server answered non-2xx. */
export type KubernetesApiFailureTransport = 'connect' | 'status'

/**
 * `KubernetesApiError.reason`: what a non-2xx answer meant (`classify-kubernetes-failure.ts`
 * decides it), or `connect-failed` when no answer arrived. The API server's own Status `reason`
 * (`NotFound`, `Conflict`, …) is `statusReason`.
 */
export type KubernetesApiFailureReason =
	| 'connect-failed'
	| 'gone'
	| 'conflict'
	| 'patch-test-failed'
	| 'patch-unapplicable'
	| 'invalid'
	| 'unauthorized'
	| 'forbidden'
	| 'throttled'
	| 'server-error'
	| 'other'

/** What a non-2xx answer meant. */
export type KubernetesFailureKind = Exclude<KubernetesApiFailureReason, 'connect-failed'>

/** `apiRequestTimeoutMs` below `MIN_API_REQUEST_TIMEOUT_MS` (or not a finite number). */
export class KubernetesApiRequestTimeoutConfigError extends SandboxError<'invalid-api-request-timeout'> {
	override readonly name = 'KubernetesApiRequestTimeoutConfigError'
	readonly field = 'apiRequestTimeoutMs'
	readonly value: number

	constructor(value: number) {
		super(
			`apiRequestTimeoutMs: ${value} refused; the bound must be at least 1000 ms and cannot be switched off`,
			'invalid-api-request-timeout',
		)
		this.value = value
	}
}

/** The request got no complete answer within `apiRequestTimeoutMs` (token, connect and body). */
export class KubernetesApiTimeoutError extends SandboxError<'api-timeout'> {
	override readonly name = 'KubernetesApiTimeoutError'
	readonly verb: KubernetesHttpMethod
	readonly path: string
	readonly timeoutMs: number

	constructor(verb: KubernetesHttpMethod, path: string, timeoutMs: number) {
		super(
			`kubernetes ${verb} ${path} timed out after ${timeoutMs} ms (apiRequestTimeoutMs)`,
			'api-timeout',
			{ retryable: true },
		)
		this.verb = verb
		this.path = path
		this.timeoutMs = timeoutMs
	}
}

export interface KubernetesApiErrorFields {
	readonly verb: KubernetesHttpMethod
	readonly path: string
	readonly transport: KubernetesApiFailureTransport
	/** HTTP status; undefined when `transport` is `connect`. */
	readonly status?: number
	/** What the answer meant; `other` when not given. Ignored for a connect failure. */
	readonly kind?: KubernetesFailureKind
	/** The Status object's `reason` (`NotFound`, `Conflict`, …), when the body was a Status. */
	readonly statusReason?: string
	/** The Status object's `message`. */
	readonly statusMessage?: string
	/** From `Retry-After` (or the Status `details.retryAfterSeconds`), in ms. */
	readonly retryAfterMs?: number
	readonly retryable: boolean
	readonly cause?: unknown
}

/** The API server refused the request, or could not be reached at all. */
export class KubernetesApiError extends SandboxError<KubernetesApiFailureReason> {
	override readonly name: string = 'KubernetesApiError'
	readonly verb: KubernetesHttpMethod
	readonly path: string
	readonly transport: KubernetesApiFailureTransport
	readonly status: number | undefined
	/** The Status object's `reason` (`NotFound`, `Conflict`, …), when the server sent one. */
	readonly statusReason: string | undefined
	readonly statusMessage: string | undefined
	readonly retryAfterMs: number | undefined

	constructor(fields: KubernetesApiErrorFields) {
		super(apiFailureMessage(fields), failureReason(fields), {
			retryable: fields.retryable,
			cause: fields.cause,
		})
		this.verb = fields.verb
		this.path = fields.path
		this.transport = fields.transport
		this.status = fields.status
		this.statusReason = fields.statusReason
		this.statusMessage = fields.statusMessage
		this.retryAfterMs = fields.retryAfterMs
	}
}

function failureReason(fields: KubernetesApiErrorFields): KubernetesApiFailureReason {
	return fields.transport === 'connect' ? 'connect-failed' : (fields.kind ?? 'other')
}

function apiFailureMessage(fields: KubernetesApiErrorFields): string {
	const head = `kubernetes ${fields.verb} ${fields.path} failed:`
	if (fields.transport === 'connect') {
		return `${head} could not reach the API server (${connectCode(fields.cause)})`
	}
	const reason = fields.statusReason === undefined ? '' : ` ${fields.statusReason}`
	const text = fields.statusMessage === undefined ? '' : `: ${fields.statusMessage.slice(0, 300)}`
	return `${head} ${fields.status ?? 'no status'}${reason}${text}`
}

function connectCode(cause: unknown): string {
	return causeCode(cause) ?? causeChain(cause).at(-1)?.message.slice(0, 120) ?? 'unknown error'
}

/** 404/410 on a DELETE or PATCH: the object is already gone, which the caller may count as done. */
export class KubernetesAlreadyGoneError extends KubernetesApiError {
	override readonly name = 'KubernetesAlreadyGoneError'
}

/** 409: an optimistic-concurrency conflict, a failed delete precondition, or `AlreadyExists`. */
export class KubernetesConflictError extends KubernetesApiError {
	override readonly name = 'KubernetesConflictError'
}

/** A JSON-patch `test` operation failed: the API server applied nothing. */
export class KubernetesPatchNotAppliedError extends KubernetesApiError {
	override readonly name = 'KubernetesPatchNotAppliedError'
}

/** The access could not produce credentials (missing files, unusable kubeconfig, getToken threw). */
export class KubernetesCredentialError extends SandboxError<'credentials-unavailable'> {
	override readonly name = 'KubernetesCredentialError'
	/** Which access form failed: `in-cluster`, `token-provider` or `kubeconfig`. */
	readonly access: 'in-cluster' | 'token-provider' | 'kubeconfig'

	constructor(
		access: 'in-cluster' | 'token-provider' | 'kubeconfig',
		detail: string,
		cause?: unknown,
	) {
		super(`kubernetes credentials (${access}) unavailable: ${detail}`, 'credentials-unavailable', {
			cause,
		})
		this.access = access
	}
}
