/**
 * `agentAddress: 'pod-ip'` follows a replaced pod. A call whose dial attempted
 * a connect and never obtained a socket re-reads the live pod once; a NEW pod uid switches the
 * transport to the new IP and token and the call is retried once, while an unchanged pod leaves the
 * original error standing. "No socket" is observed through the dial hooks, never read from error
 * text, so a SYN-dropping old address that hits a 2 s control bound still counts. The one pod
 * read of a failure episode starts at its first failed connect, so a long connect-retry budget is
 * not spent on an address whose pod is already gone, and is reused rather than repeated by every
 * later attempt and by the rebind itself.
 */
import type { AgentTransport } from '../../host/transport/agent-transport.js'
import type { KubernetesApiPort } from './kubernetes-api-port.js'
import { kubernetesPaths } from './kubernetes-objects.js'
import { podAddress } from './readiness.js'

/** Counts connect attempts and established sockets across the transport's dials. */
export class DialTracker {
	#attempts = 0
	#sockets = 0

	onAttempt(): void {
		this.#attempts++
	}

	onSocket(): void {
		this.#sockets++
	}

	snapshot(): { readonly attempts: number; readonly sockets: number } {
		return { attempts: this.#attempts, sockets: this.#sockets }
	}

	/** True when, since `before`, a connect was attempted and none yielded a socket. */
	connectFailedSince(before: { readonly attempts: number; readonly sockets: number }): boolean {
		return this.#attempts > before.attempts && this.#sockets === before.sockets
	}
}

/** Bound on the one pod read a rebind makes. */
const POD_READ_TIMEOUT_MS = 5_000

export interface PodRebinderOptions {
	readonly api: KubernetesApiPort
	readonly namespace: string
	readonly podName: string
	readonly port: number
	/** The pod uid the transport currently carries as its token. */
	readonly token: string
	readonly transport: AgentTransport
}

export class PodRebinder {
	readonly #options: PodRebinderOptions
	#currentUid: string
	#check: Promise<{ uid: string; host: string } | undefined> | undefined

	constructor(options: PodRebinderOptions) {
		this.#options = options
		this.#currentUid = options.token
	}

	/** `permanentDialFailure` for pod-ip mode: stop retrying once the pod is known to be replaced. */
	readonly permanentDialFailure = (): boolean => {
		// The episode's one pod read starts at its first failed connect; later attempts reuse it.
		this.#check ??= this.#readReplacement()
		return this.#replacementKnown
	}

	/** A socket was established: the failure episode is over and its pod read is forgotten. */
	dialSucceeded(): void {
		this.#check = undefined
		this.#replacementKnown = false
	}

	#replacementKnown = false

	/**
	 * Re-reads the pod once per failure episode (reusing the read the failed dial already started)
	 * and, when it was replaced and has an address, points the transport at it. Resolves whether the
	 * handle moved.
	 */
	async rebind(): Promise<boolean> {
		const replacement = await (this.#check ?? this.#readReplacement())
		this.#check = undefined
		this.#replacementKnown = false
		if (!replacement) return false
		this.#currentUid = replacement.uid
		this.#options.transport.rebind({
			kind: 'tcp',
			host: replacement.host,
			port: this.#options.port,
			token: replacement.uid,
		})
		return true
	}

	async #readReplacement(): Promise<{ uid: string; host: string } | undefined> {
		const { api, namespace, podName } = this.#options
		try {
			const pod = await api.get(kubernetesPaths.pod(namespace, podName), {
				signal: AbortSignal.timeout(POD_READ_TIMEOUT_MS),
			})
			const uid = pod.metadata.uid
			const host = podAddress(pod)
			if (typeof uid !== 'string' || uid === this.#currentUid || host === undefined)
				return undefined
			this.#replacementKnown = true
			return { uid, host }
		} catch {
			return undefined
		}
	}
}
