/**
 * The ACI standby pool's errors. ARM's own `error.code` never becomes `reason`: it travels as
 * `armCode`. No message holds the bearer token, a storage key or a response body beyond ARM's own
 * short `error.message`.
 */
import { SandboxError, type SandboxErrorOptions } from '../../../contract/errors.js'

/** The ARM call a failure belongs to. */
export type ArmOperation = 'claim' | 'poll' | 'delete'

/** What went wrong with an ARM call, as the error's `reason`. */
export type ArmFailureReason =
	/** `getArmToken()` threw or gave something that is not a token. */
	| 'token-unavailable'
	/** 401: the token was refused. */
	| 'auth'
	/** 403: the identity lacks a role on the pool, the profile or the resource group. */
	| 'forbidden'
	/** 404: the resource group, the pool or the group is not there. */
	| 'not-found'
	/** 409: another operation holds the group. */
	| 'conflict'
	/** 429: ARM throttled the subscription (retryable, `retryAfterMs` when ARM said). */
	| 'throttled'
	/** A quota of the subscription or region is used up. */
	| 'quota'
	/** The pool had no group to hand out and the claim was told not to create one cold. */
	| 'pool-empty'
	/** Any other 4xx: ARM refused the request as written. */
	| 'rejected'
	/** 5xx: ARM or the resource provider failed (retryable). */
	| 'server'
	/** The request never got an answer (DNS, connect, reset; retryable). */
	| 'unreachable'
	/** An answer that is not ARM's documented shape, or larger than the bound. */
	| 'protocol'

/** A refused or failed Azure Resource Manager call. */
export class ACIArmError extends SandboxError<ArmFailureReason> {
	override readonly name = 'ACIArmError'
	readonly operation: ArmOperation
	readonly method: string
	/** The resource path (no query, no host). */
	readonly path: string
	readonly status: number | undefined
	/** ARM's `error.code` (`ContainerGroupQuotaReached`, …), when it sent one. */
	readonly armCode: string | undefined
	readonly retryAfterMs: number | undefined

	constructor(
		fields: {
			readonly reason: ArmFailureReason
			readonly operation: ArmOperation
			readonly method: string
			readonly path: string
			readonly status?: number
			readonly armCode?: string
			readonly armMessage?: string
			readonly retryAfterMs?: number
		},
		options: SandboxErrorOptions = {},
	) {
		super(armMessage(fields), fields.reason, {
			retryable: RETRYABLE.has(fields.reason),
			...options,
		})
		this.operation = fields.operation
		this.method = fields.method
		this.path = fields.path
		this.status = fields.status
		this.armCode = fields.armCode
		this.retryAfterMs = fields.retryAfterMs
	}
}

const RETRYABLE: ReadonlySet<ArmFailureReason> = new Set([
	'throttled',
	'pool-empty',
	'server',
	'unreachable',
	'conflict',
])

const ADVICE: Readonly<Record<ArmFailureReason, string>> = {
	'token-unavailable': 'check the getArmToken() you passed: it must resolve to a bearer token',
	auth: 'the ARM token was refused: give a fresh token for https://management.azure.com/',
	forbidden:
		'grant the identity Contributor (or the ACI and StandbyPool actions) on the resource group',
	'not-found': 'check subscriptionId, resourceGroup and the pool and profile resource ids',
	conflict: 'another operation holds the container group; retry',
	throttled: 'ARM throttled the subscription; retry after the interval it gave',
	quota: 'raise the quota, or lower the pool or the number of concurrent sandboxes',
	'pool-empty': 'the standby pool had no ready group; retry, or raise the pool maxReadyCapacity',
	rejected: 'ARM refused the request as written',
	server: 'ARM or Container Instances failed; retry',
	unreachable: 'ARM did not answer; check the network path to management.azure.com',
	protocol: 'ARM answered outside its documented shape',
}

function armMessage(fields: {
	readonly reason: ArmFailureReason
	readonly operation: ArmOperation
	readonly method: string
	readonly path: string
	readonly status?: number
	readonly armCode?: string
	readonly armMessage?: string
}): string {
	const status = fields.status === undefined ? '' : ` ${fields.status}`
	const code = fields.armCode === undefined ? '' : ` ${fields.armCode}`
	const text = fields.armMessage === undefined ? '' : `: ${fields.armMessage.slice(0, 300)}`
	return `ACI ${fields.operation} (${fields.method} ${fields.path}) failed${status}${code}${text}; ${ADVICE[fields.reason]}`
}

/** Why a claimed group never became a reachable agent. */
export type ACIGroupFailureReason =
	| 'provisioning-failed'
	| 'ready-timeout'
	| 'agent-unreachable'
	/** Another peer presented a token to the group's agent first: the group was not used. */
	| 'agent-token-refused'

/** A claimed container group that did not become usable; it has been deleted (`deleted`). */
export class ACIGroupNotReadyError extends SandboxError<ACIGroupFailureReason> {
	override readonly name = 'ACIGroupNotReadyError'
	readonly groupName: string
	/** The last `provisioningState` seen, when any. */
	readonly provisioningState: string | undefined
	/** Whether the clean-up DELETE was accepted (false: the group may still exist; delete it). */
	readonly deleted: boolean

	constructor(
		reason: ACIGroupFailureReason,
		groupName: string,
		detail: string,
		fields: { readonly provisioningState?: string; readonly deleted: boolean },
		options: SandboxErrorOptions = {},
	) {
		const cleanup = fields.deleted
			? 'the group was deleted'
			: `the clean-up DELETE failed: delete container group ${groupName} yourself`
		super(`ACI container group ${groupName} not usable: ${detail}; ${cleanup}`, reason, {
			retryable: reason === 'ready-timeout' || reason === 'agent-unreachable',
			...options,
		})
		this.groupName = groupName
		this.provisioningState = fields.provisioningState
		this.deleted = fields.deleted
	}
}

/** A `create()` or provider setting ACI's claim cannot carry (the group is the profile's). */
export class ACIOptionUnsupportedError extends SandboxError<'option-unsupported'> {
	override readonly name = 'ACIOptionUnsupportedError'
	readonly field: string

	constructor(field: string, detail: string, options: SandboxErrorOptions = {}) {
		super(
			`${field} is not supported by the ACI standby pool: ${detail}`,
			'option-unsupported',
			options,
		)
		this.field = field
	}
}
