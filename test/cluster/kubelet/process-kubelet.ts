/**
 * The process kubelet: registers a Ready Node (with heartbeat), binds every unscheduled pod to it,
 * and runs each pod bound to it as a `PodRuntime` (network namespace + the agent under bubblewrap),
 * reporting status, running graceful deletion to the final `DELETE`, and provisioning PVCs
 * (directories, or loop devices for block-mode claims).
 *
 * It POLLS rather than watches: every `SYNC_INTERVAL_MS` (200 ms) one list of pods and one of
 * PVCs across all namespaces. A test cluster holds tens of objects, a list costs about a
 * millisecond, and polling has no watch bookkeeping (bookmarks, 410 re-lists) to get wrong; a
 * runtime change (process exit, probe result) is written at once, not on the next tick. A failed
 * list or write (API paused/frozen) is simply retried on the next tick.
 */
import { constants } from 'node:fs'
import { access, appendFile, mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { type EnvSources, referencedSources } from './downward-env.js'
import { type GuestImage, loadGuestImage } from './guest-image.js'
import { HarnessNetwork } from './harness-network.js'
import { DEFAULT_BWRAP_PATH, executable, readRootEntries } from './host-image.js'
import { type ClusterAccess, isStatus, KubeClient } from './kube-client.js'
import type { Container, ObjectList, ObjectRef, PersistentVolumeClaim, Pod } from './kube-types.js'
import { podPath, refKey } from './kube-types.js'
import { KubeletFaultError } from './kubelet-errors.js'
import { reapAbandonedLoops } from './loop-devices.js'
import { HEARTBEAT_INTERVAL_MS, heartbeat, registerNode } from './node-registration.js'
import type { RootEntry } from './pod-bwrap-argv.js'
import { PodFirewalls, type RunningPod } from './pod-firewall.js'
import { PodNetworkAllocator } from './pod-network.js'
import { PodRuntime } from './pod-runtime.js'
import { buildPodStatus, unschedulableConditions } from './pod-status.js'
import { PodStatusWriter } from './pod-status-writer.js'
import { PvcStore, pvcDirectoryPath } from './pvc-store.js'

export const SYNC_INTERVAL_MS = 200

export interface ProcessKubeletOptions {
	readonly access: ClusterAccess
	readonly stateDir: string
	readonly agentBundlePath: string
	readonly nodeName?: string
	readonly signal?: AbortSignal
	/** bubblewrap binary (default /usr/bin/bwrap). */
	readonly bwrapPath?: string
	/** The built guest image's root filesystem: pods naming `namzu-sandbox-guest` run from it. */
	readonly guestImageRootfs?: string
}

export interface KubeletFaults {
	/** SIGKILLs the pod's agent (its container's pid 1); the kubelet then restarts it in place. */
	killAgent(pod: ObjectRef): Promise<void>
	/** SIGSTOPs every process of the pod's container; call the result to SIGCONT them. */
	freezeAgent(pod: ObjectRef): Promise<() => Promise<void>>
	/**
	 * Never binds the pod: it gets `PodScheduled=False`, reason `Unschedulable`. Rejects with
	 * `already-scheduled` when the pod was bound first (even by a sync under way as it was called).
	 */
	markUnschedulable(pod: ObjectRef): Promise<void>
	/** The pod's containers report `ErrImagePull` instead of running (a running one is killed). */
	reportImagePullError(pod: ObjectRef): Promise<void>
	/**
	 * Applies `fault` to every pod of `namespace` from now on, as the per-pod calls above do to one,
	 * until the returned function lifts it: for a pod whose name is not known before it exists,
	 * which a per-pod call can only reach after it may already have been bound and started.
	 */
	faultNamespace(namespace: string, fault: PodFault): () => void
}

/** The pod faults that can be set on a whole namespace as well as on one pod. */
export type PodFault = 'unschedulable' | 'image-pull'

export interface ProcessKubelet {
	readonly nodeName: string
	readonly faults: KubeletFaults
	/** The harness bridge, its /24 and the pods' gateway (for tests and diagnostics). */
	readonly network: { readonly bridge: string; readonly subnet: string; readonly gateway: string }
	/** Throws unless `address` routes onto the harness bridge: call before dialing a pod address. */
	assertPodRoute(address: string): Promise<void>
	/** Host directory of a claim (may not exist yet), or undefined when the claim is unknown. */
	pvcDirectory(claim: ObjectRef): Promise<string | undefined>
	/** The loop device a block-mode claim is attached to now, or undefined when it is not. */
	pvcBlockDevice(claim: ObjectRef): Promise<string | undefined>
	stop(): Promise<void>
}

interface PodEntry {
	readonly uid: string
	readonly ref: ObjectRef
	pod: Pod
	runtime?: PodRuntime
	starting?: Promise<void>
	deleting?: Promise<void>
	readonly writer: PodStatusWriter
	readonly claimUids: Set<string>
}

function decodeSecret(data: Readonly<Record<string, string>> | undefined): Record<string, string> {
	return Object.fromEntries(
		Object.entries(data ?? {}).map(([key, value]) => [
			key,
			Buffer.from(value, 'base64').toString('utf8'),
		]),
	)
}

class Kubelet implements ProcessKubelet {
	readonly nodeName: string
	readonly faults: KubeletFaults
	readonly #client: KubeClient
	readonly #net: HarnessNetwork
	readonly #allocator: PodNetworkAllocator
	readonly #pvcs: PvcStore
	readonly #options: ProcessKubeletOptions
	readonly #rootEntries: readonly RootEntry[]
	readonly #guestImage: GuestImage | undefined
	readonly #entries = new Map<string, PodEntry>()
	/** Pods (by `refKey`) and namespaces each fault applies to. */
	readonly #podFaults: Record<PodFault, Set<string>> = {
		unschedulable: new Set(),
		'image-pull': new Set(),
	}
	readonly #namespaceFaults: Record<PodFault, Set<string>> = {
		unschedulable: new Set(),
		'image-pull': new Set(),
	}
	readonly #unschedulableWritten = new Set<string>()
	readonly #stopController = new AbortController()
	readonly #firewalls: PodFirewalls
	#tick: Promise<void> = Promise.resolve()
	#timer: NodeJS.Timeout | undefined
	#heartbeat: NodeJS.Timeout | undefined
	#stopping: Promise<void> | undefined
	#log: Promise<void> = Promise.resolve()

	constructor(
		options: ProcessKubeletOptions,
		client: KubeClient,
		net: HarnessNetwork,
		rootEntries: readonly RootEntry[],
		nodeName: string,
		guestImage: GuestImage | undefined,
	) {
		this.#options = options
		this.#client = client
		this.#net = net
		this.#rootEntries = rootEntries
		this.#guestImage = guestImage
		this.nodeName = nodeName
		this.#allocator = new PodNetworkAllocator(net)
		this.#pvcs = new PvcStore(client, join(options.stateDir, 'pvcs'))
		this.#firewalls = new PodFirewalls(options.stateDir)
		this.faults = {
			killAgent: (pod) => this.#killAgent(pod),
			freezeAgent: (pod) => this.#freezeAgent(pod),
			markUnschedulable: (pod) => this.#markUnschedulable(pod),
			reportImagePullError: (pod) => this.#reportImagePullError(pod),
			faultNamespace: (namespace, fault) => {
				const faulted = this.#namespaceFaults[fault]
				faulted.add(namespace)
				return () => void faulted.delete(namespace)
			},
		}
	}

	get network() {
		const { bridge, subnet, gateway } = this.#net.plan
		return { bridge, subnet, gateway }
	}

	assertPodRoute(address: string): Promise<void> {
		return this.#net.assertRouted(address)
	}

	async pvcDirectory(claim: ObjectRef): Promise<string | undefined> {
		const found = await this.#pvcs.claim(claim.namespace, claim.name)
		const uid = found?.metadata.uid
		return uid === undefined ? undefined : pvcDirectoryPath(this.#pvcs.root, claim.namespace, uid)
	}

	async pvcBlockDevice(claim: ObjectRef): Promise<string | undefined> {
		const uid = (await this.#pvcs.claim(claim.namespace, claim.name))?.metadata.uid
		return uid === undefined ? undefined : this.#pvcs.attachedDevice(uid)
	}

	log(line: string): void {
		const file = join(this.#options.stateDir, 'kubelet.log')
		this.#log = this.#log
			.then(() => appendFile(file, `${new Date().toISOString()} ${line}\n`))
			.catch(() => undefined)
	}

	async start(): Promise<void> {
		await registerNode(
			this.#client,
			this.nodeName,
			this.#net.plan.gateway,
			this.#stopController.signal,
		)
		this.#heartbeat = setInterval(() => {
			heartbeat(
				this.#client,
				this.nodeName,
				this.#net.plan.gateway,
				this.#stopController.signal,
			).catch((error: unknown) => this.log(`heartbeat failed: ${String(error)}`))
		}, HEARTBEAT_INTERVAL_MS)
		this.#schedule(0)
	}

	#schedule(delayMs: number): void {
		if (this.#stopping) return
		this.#timer = setTimeout(() => {
			this.#tick = this.#sync().catch((error: unknown) => this.log(`sync failed: ${String(error)}`))
			this.#tick.then(() => this.#schedule(SYNC_INTERVAL_MS))
		}, delayMs)
	}

	/** Runs one more full sync after the one in flight. */
	async syncNow(): Promise<void> {
		await this.#tick
		if (this.#stopping) return
		this.#tick = this.#sync().catch((error: unknown) => this.log(`sync failed: ${String(error)}`))
		await this.#tick
	}

	async #sync(): Promise<void> {
		const signal = this.#stopController.signal
		const pods = await this.#client.get<ObjectList<Pod>>('/api/v1/pods', signal)
		const seen = new Set<string>()
		for (const pod of pods.items) {
			const uid = pod.metadata.uid ?? ''
			seen.add(uid)
			const nodeName = pod.spec.nodeName ?? ''
			if (nodeName === '') await this.#schedulePod(pod)
			else if (nodeName === this.nodeName) this.#syncPod(pod)
		}
		for (const entry of this.#entries.values()) {
			if (!seen.has(entry.uid)) this.#forget(entry, 'gone from the API')
			else if (!entry.deleting) void entry.writer.schedule()
		}
		// NetworkPolicy, enforced in each pod's namespace and re-evaluated on every sync.
		await this.#firewalls.sync(this.#client, pods.items, this.#running(), signal, (line) =>
			this.log(line),
		)
		const claims = await this.#client.get<ObjectList<PersistentVolumeClaim>>(
			'/api/v1/persistentvolumeclaims',
			signal,
		)
		const inUse = new Set<string>()
		for (const entry of this.#entries.values()) for (const uid of entry.claimUids) inUse.add(uid)
		await this.#pvcs.observe(claims.items, inUse)
	}

	async #schedulePod(pod: Pod): Promise<void> {
		if (pod.metadata.deletionTimestamp) return
		const ref = { namespace: pod.metadata.namespace ?? 'default', name: pod.metadata.name ?? '' }
		const base = podPath(ref)
		const key = refKey(ref)
		if (this.#hasFault('unschedulable', ref)) {
			const uid = pod.metadata.uid ?? ''
			if (this.#unschedulableWritten.has(uid)) return
			const conditions = unschedulableConditions(
				pod.status?.conditions ?? [],
				this.nodeName,
				new Date().toISOString(),
			)
			try {
				await this.#client.patch(`${base}/status`, 'strategic', {
					status: { phase: 'Pending', conditions },
				})
				this.#unschedulableWritten.add(uid)
			} catch (error) {
				this.log(`unschedulable status for ${key} failed: ${String(error)}`)
			}
			return
		}
		try {
			await this.#client.post(`${base}/binding`, {
				apiVersion: 'v1',
				kind: 'Binding',
				metadata: { name: ref.name, namespace: ref.namespace, uid: pod.metadata.uid },
				target: { apiVersion: 'v1', kind: 'Node', name: this.nodeName },
			})
			this.log(`bound ${key}`)
		} catch (error) {
			if (!isStatus(error, 404, 409)) this.log(`binding ${key} failed: ${String(error)}`)
		}
	}

	#syncPod(pod: Pod): void {
		const uid = pod.metadata.uid ?? ''
		let entry = this.#entries.get(uid)
		const phase = pod.status?.phase
		const terminal = phase === 'Succeeded' || phase === 'Failed'
		if (entry === undefined) {
			const ref = { namespace: pod.metadata.namespace ?? 'default', name: pod.metadata.name ?? '' }
			const created: PodEntry = {
				uid,
				ref,
				pod,
				claimUids: new Set(),
				writer: new PodStatusWriter(this.#client, ref, (previous) => {
					const runtime = created.runtime
					if (runtime === undefined) return undefined
					return buildPodStatus(runtime.snapshot(), previous, new Date().toISOString())
				}),
			}
			created.writer.seed(pod.status?.conditions)
			entry = created
			this.#entries.set(uid, entry)
			if (!terminal && !pod.metadata.deletionTimestamp) entry.starting = this.#startPod(entry)
		}
		entry.pod = pod
		entry.runtime?.update(pod)
		if (pod.metadata.deletionTimestamp && !entry.deleting) entry.deleting = this.#deletePod(entry)
	}

	async #startPod(entry: PodEntry): Promise<void> {
		const pod = entry.pod
		try {
			const runtime = await PodRuntime.start(pod, {
				network: this.#net,
				allocator: this.#allocator,
				podDir: join(this.#options.stateDir, 'pods', entry.uid),
				agentBundlePath: this.#options.agentBundlePath,
				nodePath: process.execPath,
				bwrapPath: this.#options.bwrapPath ?? DEFAULT_BWRAP_PATH,
				rootEntries: this.#rootEntries,
				...(this.#guestImage ? { guestImage: this.#guestImage } : {}),
				claimVolume: async (namespace, claimName) => {
					const result = await this.#pvcs.volume(namespace, claimName, entry.uid)
					if (result.ok) entry.claimUids.add(result.uid)
					return result
				},
				releaseClaims: () => this.#pvcs.release(entry.uid),
				envSources: (p, container) => this.#envSources(p, container),
				onChange: () => void entry.writer.schedule(),
				imagePullError: this.#hasFault('image-pull', entry.ref),
			})
			entry.runtime = runtime
			const netns = runtime.netns
			if (netns !== undefined) {
				await this.#firewalls.applyTo({ uid: entry.uid, netns, pod }, (line) => this.log(line))
			}
			this.log(`started ${refKey(entry.ref)} at ${runtime.address}`)
			void entry.writer.schedule()
		} catch (error) {
			this.log(`starting ${refKey(entry.ref)} failed: ${String(error)}`)
			// Dropped: the next tick tries again.
			this.#entries.delete(entry.uid)
		}
	}

	async #envSources(pod: Pod, container: Container): Promise<EnvSources> {
		const namespace = pod.metadata.namespace ?? 'default'
		const wanted = referencedSources(container)
		const configMaps = new Map<string, Record<string, string>>()
		const secrets = new Map<string, Record<string, string>>()
		for (const name of wanted.configMaps) {
			try {
				const object = await this.#client.get<{ data?: Record<string, string> }>(
					`/api/v1/namespaces/${namespace}/configmaps/${name}`,
				)
				configMaps.set(name, object.data ?? {})
			} catch (error) {
				if (!isStatus(error, 404)) throw error
			}
		}
		for (const name of wanted.secrets) {
			try {
				const object = await this.#client.get<{ data?: Record<string, string> }>(
					`/api/v1/namespaces/${namespace}/secrets/${name}`,
				)
				secrets.set(name, decodeSecret(object.data))
			} catch (error) {
				if (!isStatus(error, 404)) throw error
			}
		}
		return { configMaps, secrets }
	}

	/** Graceful deletion: preStop, SIGTERM, grace, SIGKILL, final status, then the final DELETE. */
	async #deletePod(entry: PodEntry): Promise<void> {
		await entry.starting
		const runtime = entry.runtime
		const key = refKey(entry.ref)
		if (runtime) {
			this.log(
				`terminating ${key} (grace ${entry.pod.metadata.deletionGracePeriodSeconds ?? '-'} s)`,
			)
			await runtime.terminate(entry.pod.metadata.deletionGracePeriodSeconds)
			await entry.writer.schedule()
		}
		entry.writer.close()
		const path = podPath(entry.ref)
		for (let attempt = 0; !this.#stopping; attempt++) {
			try {
				await this.#client.delete(path, {
					apiVersion: 'v1',
					kind: 'DeleteOptions',
					gracePeriodSeconds: 0,
					preconditions: { uid: entry.uid },
				})
				break
			} catch (error) {
				if (isStatus(error, 404, 409)) break
				this.log(`final delete of ${key} failed (attempt ${attempt + 1}): ${String(error)}`)
				await new Promise((resolve) => setTimeout(resolve, SYNC_INTERVAL_MS))
			}
		}
		await runtime?.release()
		this.#entries.delete(entry.uid)
		this.log(`deleted ${key}`)
	}

	#running(): RunningPod[] {
		const out: RunningPod[] = []
		for (const entry of this.#entries.values()) {
			const netns = entry.runtime?.netns
			if (netns !== undefined && !entry.deleting)
				out.push({ uid: entry.uid, netns, pod: entry.pod })
		}
		return out
	}

	#forget(entry: PodEntry, why: string): void {
		this.#firewalls.forget(entry.uid)
		if (entry.deleting) return
		this.#entries.delete(entry.uid)
		entry.writer.close()
		entry.deleting = (async () => {
			await entry.starting
			await entry.runtime?.release()
		})()
		this.log(`released ${refKey(entry.ref)}: ${why}`)
	}

	async #entry(ref: ObjectRef): Promise<PodEntry | undefined> {
		const key = refKey(ref)
		for (const entry of this.#entries.values()) {
			if (refKey(entry.ref) === key && !entry.deleting) {
				await entry.starting
				return entry
			}
		}
		return undefined
	}

	async #runningProcess(ref: ObjectRef) {
		const entry = await this.#entry(ref)
		const process = entry?.runtime?.runner()?.process
		if (process === undefined) {
			throw new KubeletFaultError(
				entry === undefined ? 'pod-not-found' : 'not-running',
				`pod ${refKey(ref)} has no running agent on node ${this.nodeName}`,
			)
		}
		return process
	}

	async #killAgent(ref: ObjectRef): Promise<void> {
		const process = await this.#runningProcess(ref)
		await process.signal('SIGKILL')
		await process.exited
	}

	async #freezeAgent(ref: ObjectRef): Promise<() => Promise<void>> {
		return (await this.#runningProcess(ref)).freeze()
	}

	#hasFault(fault: PodFault, ref: ObjectRef): boolean {
		return (
			this.#podFaults[fault].has(refKey(ref)) || this.#namespaceFaults[fault].has(ref.namespace)
		)
	}

	async #markUnschedulable(ref: ObjectRef): Promise<void> {
		const key = refKey(ref)
		this.#podFaults.unschedulable.add(key)
		// A sync under way may have read the pod unbound before the mark and be binding it now, and
		// a bound pod has no entry until the next sync: let that one finish, then ask the API.
		await this.#tick
		const pod = await this.#client.get<Pod>(podPath(ref)).catch((error: unknown) => {
			if (isStatus(error, 404)) return undefined
			throw error
		})
		const boundTo = pod?.spec.nodeName ?? ''
		if (boundTo !== '') {
			this.#podFaults.unschedulable.delete(key)
			throw new KubeletFaultError('already-scheduled', `pod ${key} is already bound to ${boundTo}`)
		}
		await this.syncNow()
	}

	async #reportImagePullError(ref: ObjectRef): Promise<void> {
		this.#podFaults['image-pull'].add(refKey(ref))
		const entry = await this.#entry(ref)
		await Promise.all((entry?.runtime?.runners ?? []).map((runner) => runner.failImagePull()))
	}

	stop(): Promise<void> {
		this.#stopping ??= (async () => {
			clearTimeout(this.#timer)
			clearInterval(this.#heartbeat)
			this.#stopController.abort()
			await this.#tick
			const entries = [...this.#entries.values()]
			await Promise.all(
				entries.map(async (entry) => {
					entry.writer.close()
					await entry.starting
					await entry.runtime?.release()
				}),
			)
			this.#entries.clear()
			await this.#pvcs.stop()
			await this.#net.stop()
			this.#client.close()
			await this.#log
		})()
		return this.#stopping
	}
}

export async function startProcessKubelet(options: ProcessKubeletOptions): Promise<ProcessKubelet> {
	options.signal?.throwIfAborted()
	const bwrapPath = options.bwrapPath ?? DEFAULT_BWRAP_PATH
	if (!(await executable(bwrapPath))) throw new Error(`bubblewrap not executable at ${bwrapPath}`)
	// Readable is enough: node runs it.
	await access(options.agentBundlePath, constants.R_OK)
	await mkdir(options.stateDir, { recursive: true })
	// A crashed run's block claims: unmounted and detached before any new one is attached.
	await reapAbandonedLoops()
	const net = await HarnessNetwork.start()
	const client = new KubeClient(options.access)
	const kubelet = new Kubelet(
		options,
		client,
		net,
		await readRootEntries(),
		options.nodeName ?? `namzu-kubelet-${net.plan.slot}`,
		options.guestImageRootfs === undefined
			? undefined
			: await loadGuestImage(options.guestImageRootfs, options.agentBundlePath),
	)
	try {
		await kubelet.start()
	} catch (error) {
		await kubelet.stop()
		throw error
	}
	options.signal?.addEventListener('abort', () => void kubelet.stop(), { once: true })
	return kubelet
}
