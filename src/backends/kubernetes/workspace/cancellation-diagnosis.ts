/**
 * What a workspace does after a command's cancellation could not be confirmed, having retired
 * nothing: one bounded `healthz` over a fresh connection says how the agent is (`ok`, `retiring` —
 * it fenced itself and only a new pod clears that — or `unreachable`), and the guest the COMMAND
 * reserved on (the pod its `reserve-execution` went to and the boot id that reply carried) is
 * compared with the guest serving now. A guest demonstrably gone turns the error into
 * `KubernetesWorkspaceGuestGoneError`; either way the caller's `onCancellationUnconfirmed` hears it.
 * Nothing here writes to the cluster or retries the command. The verdicts are pure.
 */

import type { RemoteCancellationUnknownError } from '../../../host/refusals/refusal-errors.js'
import type { AgentTransport } from '../../../host/transport/agent-transport.js'
import { AGENT_OP } from '../../../wire/protocol.js'
import type { KubernetesGuestRef } from './guest-identity.js'
import { guestRestartReason, type KubernetesGuestRestartReason } from './guest-restart-events.js'
import { KubernetesWorkspaceGuestGoneError } from './workspace-guest-errors.js'

/** How the agent answered the diagnosis `healthz`. */
export type KubernetesWorkspaceAgentState = 'ok' | 'retiring' | 'unreachable'

/** Whether the guest the command reserved on still serves the workspace. */
export type KubernetesWorkspaceGuestVerdict = 'same' | 'gone' | 'unknown'

/** What `KubernetesWorkspaceOptions.onCancellationUnconfirmed` receives. */
export interface KubernetesWorkspaceCancellationNotice {
	/** The error `exec()` rejects with (a `KubernetesWorkspaceGuestGoneError` when `guest` is gone). */
	readonly error: RemoteCancellationUnknownError
	readonly agent: KubernetesWorkspaceAgentState
	readonly guest: KubernetesWorkspaceGuestVerdict
	/** The guest the command reserved on, when known. */
	readonly previous?: KubernetesGuestRef
	/** The guest serving now, when it could be read; its boot id only if it ran in that pod. */
	readonly current?: KubernetesGuestRef
}

/** Bound on the diagnosis `healthz`, dial included. */
export const DIAGNOSIS_HEALTHZ_TIMEOUT_MS = 5_000

/** A `healthz` outcome as the agent's state: a failure or any malformed answer is `unreachable`. */
export function agentStateOf(
	outcome: { readonly reply: Record<string, unknown> } | { readonly failure: unknown },
): KubernetesWorkspaceAgentState {
	if (!('reply' in outcome)) return 'unreachable'
	if (outcome.reply.ok === true) return 'ok'
	return outcome.reply.retiring === true ? 'retiring' : 'unreachable'
}

/**
 * The guest verdict: another pod, or another boot id in the same pod, is `gone`; the same pod with
 * the same boot id is `same`; anything not known on both sides is `unknown`.
 */
export function judgeGuest(
	previous: KubernetesGuestRef | undefined,
	current: KubernetesGuestRef | undefined,
): {
	readonly guest: KubernetesWorkspaceGuestVerdict
	readonly change?: KubernetesGuestRestartReason
} {
	if (previous === undefined || current === undefined) return { guest: 'unknown' }
	const change = guestRestartReason(previous, current)
	if (change !== undefined) return { guest: 'gone', change }
	const proven = previous.guestBootId !== undefined && current.guestBootId !== undefined
	return { guest: proven ? 'same' : 'unknown' }
}

/** The pod uid a handle carries as its bind token (a Kubernetes guest is always `tcp`). */
export function handlePodUid(handle: AgentTransport['handle']): string | undefined {
	return handle.kind === 'tcp' ? handle.token : undefined
}

/**
 * The guest serving now: `podUid` as re-read from the cluster, with the transport's boot id only
 * when the transport last spoke to that very pod.
 */
export function currentGuest(
	podUid: string | undefined,
	transport: Pick<AgentTransport, 'handle' | 'guestBootId'>,
): KubernetesGuestRef | undefined {
	if (podUid === undefined) return undefined
	const bootId = transport.guestBootId
	const sameProcess = bootId !== undefined && handlePodUid(transport.handle) === podUid
	return sameProcess ? { podUid, guestBootId: bootId } : { podUid }
}

/** The guest the command reserved on, from the transport's record of its reservation. */
export function reservedGuest(
	error: RemoteCancellationUnknownError,
	transport: Pick<AgentTransport, 'reservedOn'>,
): KubernetesGuestRef | undefined {
	if (error.executionId === undefined) return undefined
	const reserved = transport.reservedOn(error.executionId)
	const podUid = reserved ? handlePodUid(reserved.handle) : undefined
	if (reserved === undefined || podUid === undefined) return undefined
	return reserved.guestBootId === undefined
		? { podUid }
		: { podUid, guestBootId: reserved.guestBootId }
}

export interface CancellationDiagnosisOptions {
	readonly transport: AgentTransport
	/** The live pod's uid as the cluster reports it now; undefined when it cannot be read. */
	readonly readCurrentPodUid: (signal: AbortSignal) => Promise<string | undefined>
	readonly onNotice?: (notice: KubernetesWorkspaceCancellationNotice) => unknown
	readonly healthzTimeoutMs?: number
}

/** Diagnoses one kept unconfirmed cancellation; resolves with the error the call rejects with. */
export async function diagnoseUnconfirmedCancellation(
	error: RemoteCancellationUnknownError,
	options: CancellationDiagnosisOptions,
): Promise<RemoteCancellationUnknownError> {
	const { transport } = options
	const bound = options.healthzTimeoutMs ?? DIAGNOSIS_HEALTHZ_TIMEOUT_MS
	const [agent, podUid] = await Promise.all([
		transport.request(AGENT_OP.healthz, undefined, { signal: AbortSignal.timeout(bound) }).then(
			(reply) => agentStateOf({ reply }),
			(failure: unknown) => agentStateOf({ failure }),
		),
		options.readCurrentPodUid(AbortSignal.timeout(bound)).catch(() => undefined),
	])
	const previous = reservedGuest(error, transport)
	const current = currentGuest(podUid, transport)
	const { guest, change } = judgeGuest(previous, current)
	const final =
		guest === 'gone' && change && previous && current
			? new KubernetesWorkspaceGuestGoneError(error, change, previous, current)
			: error
	notify(options.onNotice, {
		error: final,
		agent,
		guest,
		...(previous ? { previous } : {}),
		...(current ? { current } : {}),
	})
	return final
}

/** The caller's hook runs detached: its failure (or a slow `suspend()` in it) is its own. */
function notify(
	onNotice: CancellationDiagnosisOptions['onNotice'],
	notice: KubernetesWorkspaceCancellationNotice,
): void {
	if (!onNotice) return
	try {
		const returned = onNotice(notice)
		if (returned instanceof Promise) returned.catch(() => undefined)
	} catch {
		// The hook's own failure never replaces the call's error.
	}
}
