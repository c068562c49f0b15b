/**
 * What a failed call through a Kubernetes handle (task sandbox or workspace) rejects with: the
 * shared guest refusals under this tier's names. Pure: both handles decide their own state first
 * (gone, suspended) and hand the rest here, so the two cannot drift apart.
 */
import { causeCode, findCause, findCauseOfType } from '../../contract/cause-chain.js'
import { SandboxDestroyedError, SandboxFileError } from '../../contract/errors.js'
import {
	AgentOpRefusedError,
	AgentUnauthorizedError,
	RemoteCancellationUnknownError,
} from '../../host/refusals/refusal-errors.js'
import { AGENT_REFUSAL } from '../../wire/refusals.js'
import {
	KubernetesAgentAddressUnresolvableError,
	KubernetesAgentRetiringError,
	KubernetesAgentUnauthorizedError,
	type KubernetesHandleTier,
	KubernetesSandboxDestroyedError,
} from './kubernetes-sandbox-errors.js'

/** Resolver codes that mean the name does not resolve (ENOTFOUND final, EAI_AGAIN temporary). */
export const UNRESOLVABLE_CODES: readonly string[] = ['ENOTFOUND', 'EAI_AGAIN']

/** True for the guest's `unauthorized` refusal, which is `AgentUnauthorizedError` on every verb. */
export function isUnauthorizedRefusal(error: unknown): boolean {
	return findCauseOfType(error, AgentUnauthorizedError) !== undefined
}

/**
 * True for a refusal of a guest that fenced itself (`agent_retiring`), whichever verb met it: a
 * reservation (`RemoteCancellationUnknownError` carrying the code), a file op (`SandboxFileError`
 * with the code) or any other op (`AgentOpRefusedError`).
 */
export function isAgentRetiringRefusal(error: unknown): boolean {
	const retiring = AGENT_REFUSAL.agent_retiring
	return (
		findCause(
			error,
			(cause) =>
				(cause instanceof RemoteCancellationUnknownError && cause.guestCode === retiring) ||
				(cause instanceof AgentOpRefusedError && cause.refusal.known === retiring) ||
				(cause instanceof SandboxFileError && cause.code === retiring),
		) !== undefined
	)
}

/** `permanentDialFailure` for a Service FQDN: ENOTFOUND is definitive, EAI_AGAIN is not. */
export function isPermanentDialFailure(error: Error): boolean {
	return causeCode(error) === 'ENOTFOUND'
}

export interface GuestCallContext {
	readonly sandboxId: string
	readonly operation: string
	readonly tier: KubernetesHandleTier
	readonly addressMode: 'service' | 'pod-ip'
	/** The agent's address: what a resolver failure names. */
	readonly host: string
}

/** The error a failed call rejects with under this tier's names; anything else unchanged. */
export function kubernetesCallError(error: unknown, context: GuestCallContext): unknown {
	const { sandboxId, operation } = context
	if (
		error instanceof SandboxDestroyedError &&
		!(error instanceof KubernetesSandboxDestroyedError)
	) {
		return new KubernetesSandboxDestroyedError(sandboxId, operation)
	}
	if (error instanceof KubernetesAgentRetiringError) return error
	if (isAgentRetiringRefusal(error)) {
		return new KubernetesAgentRetiringError(sandboxId, operation, context.tier, { cause: error })
	}
	if (isUnauthorizedRefusal(error)) {
		return new KubernetesAgentUnauthorizedError(sandboxId, operation, { cause: error })
	}
	const code = causeCode(error)
	if (context.addressMode === 'service' && code && UNRESOLVABLE_CODES.includes(code)) {
		return new KubernetesAgentAddressUnresolvableError(context.host, code, { cause: error })
	}
	return error
}
