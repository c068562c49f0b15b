/**
 * Refusals of a Kubernetes task sandbox once it exists (and of the options `create()` cannot honour
 * on this tier). Messages name the operation, the object and the remedy, never the bind token.
 */
import { SandboxDestroyedError, SandboxError } from '../../contract/errors.js'
import type {
	PrivilegeProbeFailure,
	ProcStatusPrivileges,
	SandboxPrivilegeProbeError,
} from '../../exec-programs/privilege-probe.js'

/**
 * Any call after `destroy()`; names the operation. It keeps the contract's `name`
 * (`SandboxDestroyedError`), which the conformance suite and callers match on; catch this tier's
 * refusal with `instanceof KubernetesSandboxDestroyedError`.
 */
export class KubernetesSandboxDestroyedError extends SandboxDestroyedError {}

/** The cluster object was deleted under the handle (the lease found it gone); nothing is dialed. */
export class KubernetesSandboxGoneError extends SandboxError<'sandbox-gone'> {
	override readonly name = 'KubernetesSandboxGoneError'
	readonly sandboxId: string
	readonly operation: string

	constructor(sandboxId: string, operation: string, options: { cause?: unknown } = {}) {
		super(
			`sandbox ${sandboxId} no longer exists on the cluster; ${operation}() refused`,
			'sandbox-gone',
			{ cause: options.cause },
		)
		this.sandboxId = sandboxId
		this.operation = operation
	}
}

/** The guest agent refused the request's credential (the pod uid) — a replaced or foreign pod. */
export class KubernetesAgentUnauthorizedError extends SandboxError<'agent-unauthorized'> {
	override readonly name = 'KubernetesAgentUnauthorizedError'
	readonly sandboxId: string
	readonly operation: string

	constructor(sandboxId: string, operation: string, options: { cause?: unknown } = {}) {
		super(
			`the guest agent of sandbox ${sandboxId} refused the bind token for ${operation}() (is the pod the one the token was read from?)`,
			'agent-unauthorized',
			{ cause: options.cause },
		)
		this.sandboxId = sandboxId
		this.operation = operation
	}
}

/** Which Kubernetes handle met the fence: what replaces the pod differs. */
export type KubernetesHandleTier = 'task' | 'workspace'

const RETIRING_REMEDY: Readonly<Record<KubernetesHandleTier, string>> = {
	task: 'destroy() this sandbox and create a new one',
	workspace: 'call suspend() then resume() to bring up a fresh pod on the same disk',
}

/**
 * The guest agent fenced itself (`agent_retiring`) after a cancellation it could not confirm and
 * refuses every op but `healthz` and `cancel-execution` until its pod is replaced. The refused call
 * ran nothing; the handle is not retired and nothing was sent to the cluster.
 */
export class KubernetesAgentRetiringError extends SandboxError<'agent-retiring'> {
	override readonly name = 'KubernetesAgentRetiringError'
	readonly sandboxId: string
	readonly operation: string
	readonly tier: KubernetesHandleTier

	constructor(
		sandboxId: string,
		operation: string,
		tier: KubernetesHandleTier,
		options: { cause?: unknown } = {},
	) {
		super(
			`the guest agent of ${tier === 'task' ? 'sandbox' : 'workspace'} ${sandboxId} is retiring (it could not confirm an earlier cancellation) and refused ${operation}() until its pod is replaced; ${RETIRING_REMEDY[tier]}`,
			'agent-retiring',
			{ cause: options.cause },
		)
		this.sandboxId = sandboxId
		this.operation = operation
		this.tier = tier
	}
}

/** A Service FQDN that does not resolve from this host (ENOTFOUND, or EAI_AGAIN past the budget). */
export class KubernetesAgentAddressUnresolvableError extends SandboxError<'agent-address-unresolvable'> {
	override readonly name = 'KubernetesAgentAddressUnresolvableError'
	readonly address: string
	readonly code: string

	constructor(address: string, code: string, options: { cause?: unknown } = {}) {
		super(
			`the agent address ${address} does not resolve from this host (${code}); a host outside the cluster cannot use cluster DNS — set agentAddress: 'pod-ip' and give the host a route into the pod network`,
			'agent-address-unresolvable',
			{ cause: options.cause, retryable: code === 'EAI_AGAIN' },
		)
		this.address = address
		this.code = code
	}
}

/** The acquire-time probe refused the guest: `probe-failed` (could not run) or `privileged`. */
export class KubernetesPrivilegeProbeError extends SandboxError<PrivilegeProbeFailure> {
	override readonly name = 'KubernetesPrivilegeProbeError'
	readonly sandboxId: string
	/** What the guest reported, when its output could be parsed. */
	readonly privileges?: ProcStatusPrivileges
	/** Fields that were not as required, for `privileged`. */
	readonly offending: readonly (keyof ProcStatusPrivileges)[]

	constructor(error: SandboxPrivilegeProbeError, sandboxId: string) {
		super(
			`sandbox ${sandboxId} was refused: ${error.message}${error.reason === 'probe-failed' ? ' (the probe could not run)' : ' (the guest is privileged)'}`,
			error.reason,
			{ cause: error },
		)
		this.sandboxId = sandboxId
		if (error.privileges) this.privileges = error.privileges
		this.offending = error.offending
	}
}

export type { PrivilegeProbeFailure, ProcStatusPrivileges }

/** A per-sandbox `create()` option this tier cannot honour (set it on the SandboxTemplate). */
export class KubernetesCreateOptionUnsupportedError extends SandboxError<'create-option-unsupported'> {
	override readonly name = 'KubernetesCreateOptionUnsupportedError'
	readonly option: string

	constructor(option: string) {
		super(
			`create(): '${option}' cannot be set per sandbox on the Kubernetes backend (a claim carrying it would cold-start or be ignored); set it on the SandboxTemplate the pool is built from`,
			'create-option-unsupported',
		)
		this.option = option
	}
}
