/**
 * What a provider knows of its warm pool's pods before it claims one, so an acquire need not wait
 * for a pod read to learn the bind token and need not pay a cold agent's first exec.
 *
 * At each `create()` (alongside the claim's POST) one LIST of the pool's pods (the pool's own
 * `status.selector`, read once) records each ready pod's name, uid and IP, and runs the privilege
 * probe once in every pod not yet seen, before any claim lands on it. A pass is remembered by pod
 * uid: a pod's security context cannot change for its life and a pool pod runs nothing before it
 * is claimed, and every request to the agent carries that uid as its bind token, which only that
 * pod's agent accepts. The acquire still reads the bound pod and uses the uid it shows; only when
 * that uid passed here (or passes in the probe under way here, which it then waits for) does it
 * skip its own probe. A refusal or a failed probe is not remembered
 * (the acquire probes, and refuses, as without the roster); every failure here is silent.
 */
import type { KubernetesApiPort } from './kubernetes-api-port.js'
import { type KubernetesObject, kubernetesPaths } from './kubernetes-objects.js'
import { conditionOf, podAddress } from './readiness.js'

/** A ready pool pod as the last LIST showed it. */
export interface RosterPod {
	readonly name: string
	readonly uid: string
	readonly ip: string
}

export interface WarmPoolRosterOptions {
	readonly api: KubernetesApiPort
	readonly namespace: string
	readonly poolName: string
	/** Runs the privilege probe once in a pod; resolves only when the guest passed it. */
	readonly warm: (pod: RosterPod, signal: AbortSignal) => Promise<void>
}

/** Pods warmed at once; a large pool is warmed over several creates. */
const MAX_CONCURRENT_WARM_UPS = 4
/** Bound on the roster's own reads: it is never worth more than the acquire it serves. */
const ROSTER_READ_TIMEOUT_MS = 5_000

function rosterPod(pod: KubernetesObject): RosterPod | undefined {
	const { name, uid } = pod.metadata
	const ip = podAddress(pod)
	if (typeof name !== 'string' || typeof uid !== 'string' || uid === '' || ip === undefined) {
		return undefined
	}
	if (pod.status?.phase !== 'Running' || conditionOf(pod, 'Ready')?.status !== 'True') {
		return undefined
	}
	return { name, uid, ip }
}

export class WarmPoolRoster {
	readonly #options: WarmPoolRosterOptions
	readonly #closed = new AbortController()
	#selector: string | undefined
	#pods = new Map<string, RosterPod>()
	/** uids probed or being probed, and those whose probe passed; pruned to the last LIST. */
	readonly #warmed = new Set<string>()
	readonly #passed = new Set<string>()
	/** The warm-ups under way, by uid: each resolves true when the pod passed. */
	readonly #inFlight = new Map<string, Promise<boolean>>()
	#refreshing: Promise<void> | undefined

	constructor(options: WarmPoolRosterOptions) {
		this.#options = options
	}

	/** The pod of that name as last listed, when it was ready. */
	lookup(podName: string): RosterPod | undefined {
		return this.#pods.get(podName)
	}

	/** Whether the pod of this uid passed the privilege probe here. */
	passed(uid: string): boolean {
		return this.#passed.has(uid)
	}

	/** The probe under way here in the pod of this uid, if any: true when it passed. */
	warming(uid: string): Promise<boolean> | undefined {
		return this.#inFlight.get(uid)
	}

	/** Starts one LIST and the warm-ups it calls for, unless one is under way; never rejects. */
	refresh(): void {
		if (this.#closed.signal.aborted || this.#refreshing) return
		this.#refreshing = this.#refresh()
			.catch(() => undefined)
			.finally(() => {
				this.#refreshing = undefined
			})
	}

	/** Stops the warm-ups under way and waits for them to settle. */
	async close(): Promise<void> {
		this.#closed.abort()
		await this.#refreshing
		await Promise.allSettled([...this.#inFlight.values()])
	}

	async #refresh(): Promise<void> {
		const { api, namespace, poolName } = this.#options
		const signal = AbortSignal.any([
			this.#closed.signal,
			AbortSignal.timeout(ROSTER_READ_TIMEOUT_MS),
		])
		if (this.#selector === undefined) {
			const pool = await api.get(kubernetesPaths.warmPool(namespace, poolName), { signal })
			const selector = pool.status?.selector
			if (typeof selector !== 'string' || selector === '') return
			this.#selector = selector
		}
		const list = await api.list(kubernetesPaths.pods(namespace), {
			labelSelector: this.#selector,
			signal,
		})
		const pods = new Map<string, RosterPod>()
		for (const item of list.items) {
			const pod = rosterPod(item)
			if (pod) pods.set(pod.name, pod)
		}
		this.#pods = pods
		const live = new Set([...pods.values()].map((pod) => pod.uid))
		for (const uid of this.#warmed) if (!live.has(uid)) this.#warmed.delete(uid)
		for (const uid of this.#passed) if (!live.has(uid)) this.#passed.delete(uid)
		for (const pod of pods.values()) {
			if (this.#inFlight.size >= MAX_CONCURRENT_WARM_UPS) break
			if (this.#warmed.has(pod.uid)) continue
			this.#warmed.add(pod.uid)
			const warming = this.#options
				.warm(pod, this.#closed.signal)
				.then(
					() => {
						// A pod pruned meanwhile (claimed, or gone) is not remembered; its pass still stands.
						if (this.#warmed.has(pod.uid)) this.#passed.add(pod.uid)
						return true
					},
					() => false,
				)
				.finally(() => this.#inFlight.delete(pod.uid))
			this.#inFlight.set(pod.uid, warming)
		}
	}
}
