/**
 * The workspace handle's view of its guest, beside the gate (`KubernetesWorkspaceHandle#call`):
 * which guest it is bound to (`identity`, the restart events), what a call the guest refused as
 * `unauthorized` leads to (one re-read through `PodRebinder.afterRefusal`; a replaced pod of the
 * same object is followed by a NEW session, so the refused call can be sent once more), and the
 * diagnosis of a command whose cancellation could not be confirmed (cancellation-diagnosis.ts).
 * Nothing here writes to the cluster.
 */
import { findCauseOfType } from '../../../contract/cause-chain.js'
import { RemoteCancellationUnknownError } from '../../../host/refusals/refusal-errors.js'
import { isUnauthorizedRefusal } from '../guest-call-errors.js'
import type { KubernetesApiPort } from '../kubernetes-api-port.js'
import type { ResolvedKubernetesBackendConfig } from '../kubernetes-backend-config.js'
import { kubernetesPaths } from '../kubernetes-objects.js'
import { type DialTracker, PodRebinder } from '../pod-rebind.js'
import { podAddress } from '../readiness.js'
import {
	diagnoseUnconfirmedCancellation,
	type KubernetesWorkspaceCancellationNotice,
} from './cancellation-diagnosis.js'
import { type KubernetesWorkspaceIdentity, readVolumeClaimUids } from './guest-identity.js'
import { isServingPod } from './guest-rebind.js'
import {
	type GuestObservationSource,
	GuestRestartWatch,
	type KubernetesGuestRestartListener,
} from './guest-restart-events.js'
import {
	KubernetesWorkspaceGuestGoneError,
	KubernetesWorkspaceReplacedError,
} from './workspace-guest-errors.js'
import {
	WORKSPACE_KEPT,
	type WorkspaceBinding,
	type WorkspaceSession,
} from './workspace-session.js'

export interface WorkspaceGuestOptions {
	readonly api: KubernetesApiPort
	readonly config: ResolvedKubernetesBackendConfig
	readonly sandboxName: string
	/** Builds the session of a new binding (the handle's `openWorkspaceSession`). */
	readonly openSession: (binding: WorkspaceBinding) => WorkspaceSession
	readonly onCancellationUnconfirmed?: (notice: KubernetesWorkspaceCancellationNotice) => void
}

/** What a refused call leads to. */
export type RefusalRecovery =
	/** Send the call once more, on this session. */
	| { readonly kind: 'retry'; readonly session: WorkspaceSession }
	| { readonly kind: 'replaced'; readonly error: KubernetesWorkspaceReplacedError }
	/** Another process suspended the workspace: the handle adopts the suspension. */
	| { readonly kind: 'suspended' }
	/** The original error stands. */
	| { readonly kind: 'none' }

/** True for an error a workspace kept its unit for, not yet diagnosed. */
export function isKeptUnconfirmedCancellation(
	error: unknown,
): error is RemoteCancellationUnknownError {
	return (
		error instanceof RemoteCancellationUnknownError &&
		!(error instanceof KubernetesWorkspaceGuestGoneError) &&
		error.retirement?.reason === WORKSPACE_KEPT
	)
}

export class WorkspaceGuest {
	readonly #options: WorkspaceGuestOptions
	readonly #watch = new GuestRestartWatch()
	#binding: WorkspaceBinding | undefined
	#claims: Readonly<Record<string, string>> = {}
	#claimsRead: Promise<void> | undefined

	constructor(options: WorkspaceGuestOptions) {
		this.#options = options
	}

	/** A session was bound: by the handle's own create/resume (silent) or by a rebind (an event). */
	bound(session: WorkspaceSession, source: GuestObservationSource): void {
		this.#binding = session
		this.#watch.observe({ podUid: session.podUid }, source)
	}

	/** A call on `session` succeeded: its reply may have told the agent process's boot id. */
	answered(session: WorkspaceSession): void {
		const guestBootId = session.transport.guestBootId
		if (guestBootId === undefined || this.#binding?.podUid !== session.podUid) return
		this.#watch.observe({ podUid: session.podUid, guestBootId }, 'guest')
	}

	onGuestRestart(listener: KubernetesGuestRestartListener): () => void {
		return this.#watch.subscribe(listener)
	}

	/**
	 * The guest last bound. `volumeClaimUids` is read once, on first use, with PVC GETs (a Role
	 * without the verb leaves it empty); until that read lands it is empty.
	 */
	identity(): KubernetesWorkspaceIdentity {
		const binding = this.#binding
		this.#claimsRead ??= this.#readClaims()
		const current = this.#watch.current
		const guestBootId =
			current && current.podUid === binding?.podUid ? current.guestBootId : undefined
		return {
			sandboxUid: binding?.sandboxUid ?? '',
			volumeClaimUids: this.#claims,
			podUid: binding?.podUid ?? '',
			...(guestBootId === undefined ? {} : { guestBootId }),
		}
	}

	async #readClaims(): Promise<void> {
		const { api, config, sandboxName } = this.#options
		try {
			const sandbox = await api.get(kubernetesPaths.sandbox(config.namespace, sandboxName), {
				signal: AbortSignal.timeout(5_000),
			})
			this.#claims = await readVolumeClaimUids(api, config.namespace, sandbox)
		} catch {
			// Identity is reported as far as it could be read; a later handle reads again.
		}
	}

	/**
	 * After `error` on `session`: only a refusal the guest made before dispatch (`unauthorized`,
	 * and never a command whose cancellation went unconfirmed) is re-read. `current` is the
	 * handle's session now: when another call already moved to a new pod, that one is retried.
	 */
	async afterRefusal(
		operation: string,
		session: WorkspaceSession,
		current: WorkspaceSession | undefined,
		error: unknown,
		dialsBefore?: ReturnType<DialTracker['snapshot']>,
	): Promise<RefusalRecovery> {
		if (findCauseOfType(error, RemoteCancellationUnknownError)) return { kind: 'none' }
		const neverConnected =
			dialsBefore !== undefined && session.podRebind?.dials.connectFailedSince(dialsBefore) === true
		if (!neverConnected && !isUnauthorizedRefusal(error)) return { kind: 'none' }
		if (current && current !== session && current.podUid !== session.podUid) {
			return { kind: 'retry', session: current }
		}
		if (neverConnected && session.podRebind) {
			// `pod-ip`: nothing reached the guest; a replaced pod is followed the same way.
			const moved = await session.podRebind.replacement()
			if (!moved) return { kind: 'none' }
			const next = this.#options.openSession({
				...bindingOf(session),
				podUid: moved.uid,
				host: moved.host,
			})
			this.bound(next, 'guest')
			return { kind: 'retry', session: next }
		}
		const { api, config, sandboxName, openSession } = this.#options
		let next: WorkspaceSession | undefined
		const rebinder = new PodRebinder({
			api,
			namespace: config.namespace,
			podName: session.podName,
			port: config.agentPort,
			token: session.podUid,
			transport: session.transport,
			addressOf: config.agentAddress === 'pod-ip' ? podAddress : () => session.host,
			follow: ({ uid, host }) => {
				next = openSession({ ...bindingOf(session), podUid: uid, host })
			},
		})
		const decision = await rebinder.afterRefusal(
			kubernetesPaths.sandbox(config.namespace, sandboxName),
			session.sandboxUid,
		)
		switch (decision.kind) {
			case 'rebind':
				if (!next) return { kind: 'none' }
				this.bound(next, 'guest')
				return { kind: 'retry', session: next }
			case 'replaced':
				return {
					kind: 'replaced',
					error: new KubernetesWorkspaceReplacedError(
						sandboxName,
						operation,
						session.sandboxUid,
						decision.observedSandboxUid,
						{ cause: error },
					),
				}
			case 'suspended':
				return { kind: 'suspended' }
			case 'unchanged':
				return { kind: 'none' }
		}
	}

	/** The diagnosis of a kept unconfirmed cancellation on `session`; resolves with the error to throw. */
	diagnose(
		session: WorkspaceSession,
		error: RemoteCancellationUnknownError,
	): Promise<RemoteCancellationUnknownError> {
		const { api, config, onCancellationUnconfirmed } = this.#options
		return diagnoseUnconfirmedCancellation(error, {
			transport: session.transport,
			readCurrentPodUid: async (signal) => {
				const pod = await api.get(kubernetesPaths.pod(config.namespace, session.podName), {
					signal,
				})
				const uid = pod.metadata.uid
				return typeof uid === 'string' && isServingPod(pod) ? uid : undefined
			},
			...(onCancellationUnconfirmed ? { onNotice: onCancellationUnconfirmed } : {}),
		})
	}
}

function bindingOf(session: WorkspaceSession): WorkspaceBinding {
	const { sandboxName, sandboxUid, podName, podUid, host } = session
	return { sandboxName, sandboxUid, podName, podUid, host }
}
