/**
 * Noticing a suspension another process made, from a call that failed: only a failure the guest
 * did not answer (a refused or reset connection, a name that no longer resolves, a timeout, an
 * unanswered control request, the guest's `unauthorized` or `agent_retiring`) can mean the pod is
 * gone, so only those pay for the one bounded re-read of the `Sandbox`. The classification is pure; `readsSuspended` is the read.
 */
import { findCause } from '../../../contract/cause-chain.js'
import { RemoteControlTimeoutError } from '../../../host/exec/exec-errors.js'
import {
	AgentConnectionError,
	AgentDialFailedError,
	AgentReadTimeoutError,
	AgentStreamSilentError,
} from '../../../host/transport/transport-errors.js'
import { isAgentRetiringRefusal, isUnauthorizedRefusal } from '../guest-call-errors.js'
import type { KubernetesApiPort } from '../kubernetes-api-port.js'
import { kubernetesPaths } from '../kubernetes-objects.js'
import { operatingModeOf } from './workspace-mode-patch.js'

/** Socket and resolver codes of a guest that was not reached (or stopped answering). */
const UNREACHED_CODES: ReadonlySet<string> = new Set([
	'ECONNREFUSED',
	'ECONNRESET',
	'EHOSTUNREACH',
	'ENETUNREACH',
	'ETIMEDOUT',
	'EPIPE',
	'ENOTFOUND',
	'EAI_AGAIN',
])

/** The transport's own names for a guest that was not reached or stopped answering. */
const UNANSWERED_TYPES = [
	AgentDialFailedError,
	AgentConnectionError,
	AgentReadTimeoutError,
	AgentStreamSilentError,
	// A control request (an exec's reservation) the guest never answered.
	RemoteControlTimeoutError,
] as const

/** Bound on the one re-read. */
const REREAD_TIMEOUT_MS = 5_000

/** True when `error` is a failure that can mean the guest's pod went away. */
export function isUnansweredFailure(error: unknown): boolean {
	if (isUnauthorizedRefusal(error) || isAgentRetiringRefusal(error)) return true
	return (
		findCause(error, (cause) => {
			if (UNANSWERED_TYPES.some((type) => cause instanceof type)) return true
			const code = (cause as { code?: unknown }).code
			return typeof code === 'string' && UNREACHED_CODES.has(code)
		}) !== undefined
	)
}

/** One bounded read: is the object's `spec.operatingMode` `Suspended`? A failed read says no. */
export async function readsSuspended(
	api: KubernetesApiPort,
	namespace: string,
	sandboxName: string,
): Promise<boolean> {
	try {
		const sandbox = await api.get(kubernetesPaths.sandbox(namespace, sandboxName), {
			signal: AbortSignal.timeout(REREAD_TIMEOUT_MS),
		})
		return operatingModeOf(sandbox) === 'Suspended'
	} catch {
		return false
	}
}
