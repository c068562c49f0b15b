/**
 * The one engine that re-reads and follows a replaced pod. Under `agentAddress: 'pod-ip'` a call
 * whose dial attempted a connect and never obtained a socket re-reads the live pod once; a NEW pod
 * uid switches the transport to the new IP and token and the call is retried once, while an
 * unchanged pod leaves the original error standing. "No socket" is observed through the dial
 * hooks, never read from error text, so a SYN-dropping old address that hits a 2 s control bound
 * still counts. The one pod read of a failure episode starts at its first failed connect, so a
 * long connect-retry budget is not spent on an address whose pod is already gone, and is reused
 * rather than repeated by every later attempt and by the rebind itself. A workspace call the guest
 * refused before dispatch (`unauthorized`) re-reads the `Sandbox` and its pod through
 * `afterRefusal` and follows a replaced pod of the same object the same way
 * (`workspace/guest-rebind.ts` decides).
 */
import type { AgentTransport } from '../../host/transport/agent-transport.js'
import { KubernetesApiError } from './api/api-errors.js'
import type { KubernetesApiPort } from './kubernetes-api-port.js'
import { type KubernetesObject, kubernetesPaths } from './kubernetes-objects.js'
import { podAddress } from './readiness.js'
import { decideAfterRefusal, type RefusedCallDecision } from './workspace/guest-rebind.js'

/** An object read, or undefined when the server says it does not exist (404). */
async function readUnlessGone(
	read: () => Promise<KubernetesObject>,
): Promise<KubernetesObject | undefined> {
	try {
		return await read()
	} catch (error) {
		if (error instanceof KubernetesApiError && error.status === 404) return undefined
		throw error
	}
}

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
	/** Where a pod's agent is dialed; default its IP (`pod-ip`). A Service FQDN outlives pods. */
	readonly addressOf?: (pod: KubernetesObject) => string | undefined
	/**
	 * Makes the move instead of pointing `transport` at the new pod: a holder that builds a new
	 * binding per pod (a workspace session) rather than rebinding its transport in place.
	 */
	readonly follow?: (move: { readonly uid: string; readonly host: string }) => void
	/** Told after every move to a new pod, whichever failure led there. */
	readonly onRebound?: (move: { readonly previousUid: string; readonly currentUid: string }) => void
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
		this.#follow(replacement.uid, replacement.host)
		return true
	}

	/** The pod uid the transport carries as its token now. */
	get currentUid(): string {
		return this.#currentUid
	}

	/**
	 * After a refusal the guest made before dispatch (`unauthorized`): re-reads the `Sandbox` at
	 * `sandboxPath` and its pod once, decides (`decideAfterRefusal`) and, on `rebind`, points the
	 * transport at the new pod. A re-read that fails leaves the refusal standing (`unchanged`).
	 */
	async afterRefusal(
		sandboxPath: string,
		expectedSandboxUid: string,
		signal?: AbortSignal,
	): Promise<RefusedCallDecision> {
		const { api, namespace, podName } = this.#options
		const bound = AbortSignal.timeout(POD_READ_TIMEOUT_MS)
		const options = { signal: signal ? AbortSignal.any([signal, bound]) : bound }
		let decision: RefusedCallDecision
		try {
			const sandbox = await readUnlessGone(() => api.get(sandboxPath, options))
			// Another object under the name (or none) is decided without its pod.
			const pod =
				sandbox?.metadata.uid === expectedSandboxUid
					? await readUnlessGone(() => api.get(kubernetesPaths.pod(namespace, podName), options))
					: undefined
			decision = decideAfterRefusal({
				expectedSandboxUid,
				currentPodUid: this.#currentUid,
				sandbox,
				pod,
				addressOf: this.#addressOf,
			})
		} catch {
			return { kind: 'unchanged', observed: 'the re-read failed' }
		}
		if (decision.kind === 'rebind') this.#follow(decision.podUid, decision.host)
		return decision
	}

	get #addressOf(): (pod: KubernetesObject) => string | undefined {
		return this.#options.addressOf ?? podAddress
	}

	/** The one move to a new pod: its uid becomes the token, its address the dial target. */
	#follow(uid: string, host: string): void {
		const previousUid = this.#currentUid
		this.#currentUid = uid
		const { follow, transport, port } = this.#options
		if (follow) follow({ uid, host })
		else transport.rebind({ kind: 'tcp', host, port, token: uid })
		this.#options.onRebound?.({ previousUid, currentUid: uid })
	}

	async #readReplacement(): Promise<{ uid: string; host: string } | undefined> {
		const { api, namespace, podName } = this.#options
		try {
			const pod = await api.get(kubernetesPaths.pod(namespace, podName), {
				signal: AbortSignal.timeout(POD_READ_TIMEOUT_MS),
			})
			const uid = pod.metadata.uid
			const host = this.#addressOf(pod)
			if (typeof uid !== 'string' || uid === this.#currentUid || host === undefined)
				return undefined
			this.#replacementKnown = true
			return { uid, host }
		} catch {
			return undefined
		}
	}
}
