/**
 * PersistentVolumeClaims, keyed by claim uid under `<stateDir>/pvcs/<namespace>/<claim uid>`. A
 * filesystem-mode claim is that directory. A block-mode claim (`volumeMode: Block`) is a real
 * block device: the sparse file `disk.img` in that directory (its size the storage request,
 * `block-claim-plan.ts`), attached as a loop device when a pod on this node first needs it,
 * formatted ext4 only while provably empty (else fsck-checked), and detached once no pod holds it. Either way the
 * claim is then marked `Bound` through its status subresource (the control plane runs no
 * provisioner; no PersistentVolume object is created and `spec.volumeName` stays empty). The
 * directory — and the disk file in it — outlives every pod and is removed once the claim is gone
 * from the API (after the pvc-protection finalizer lets it go). Keyed by uid, so a claim deleted
 * and re-created under the same name starts empty.
 */
import { mkdir, readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { blockClaimSize, isBlockClaim } from './block-claim-plan.js'
import { isStatus, type KubeClient } from './kube-client.js'
import type { PersistentVolumeClaim } from './kube-types.js'
import { attachLoop, detachLoop, ensureSparseFile, LOOP_REGISTRY_DIR } from './loop-devices.js'

export const BLOCK_DISK_FILE = 'disk.img'

export function pvcDirectoryPath(root: string, namespace: string, uid: string): string {
	return join(root, namespace, uid)
}

export type ClaimVolume =
	| { readonly ok: true; readonly kind: 'directory'; readonly uid: string; readonly path: string }
	| { readonly ok: true; readonly kind: 'block'; readonly uid: string; readonly device: string }
	| { readonly ok: false; readonly message: string }

interface AttachedDisk {
	readonly device: string
	readonly file: string
}

export class PvcStore {
	readonly root: string
	readonly #client: KubeClient
	readonly #loopRegistry: string
	#claims = new Map<string, PersistentVolumeClaim>()
	readonly #bound = new Set<string>()
	/** Block claims attached now, by claim uid. */
	readonly #attached = new Map<string, AttachedDisk>()
	/** Pods (by uid) holding each claim uid, so a disk is detached when its last pod lets go. */
	readonly #holders = new Map<string, Set<string>>()
	/** One attach/detach at a time per claim. */
	readonly #locks = new Map<string, Promise<unknown>>()

	constructor(client: KubeClient, root: string, loopRegistry: string = LOOP_REGISTRY_DIR) {
		this.#client = client
		this.root = root
		this.#loopRegistry = loopRegistry
	}

	#serial<T>(uid: string, work: () => Promise<T>): Promise<T> {
		const previous = this.#locks.get(uid) ?? Promise.resolve()
		const next = previous.then(work, work)
		const settled = next.catch(() => undefined)
		this.#locks.set(uid, settled)
		void settled.then(() => {
			if (this.#locks.get(uid) === settled) this.#locks.delete(uid)
		})
		return next
	}

	/** The latest full list from the API: cache it; detach idle disks; remove vanished claims. */
	async observe(
		claims: readonly PersistentVolumeClaim[],
		inUse: ReadonlySet<string>,
	): Promise<void> {
		this.#claims = new Map(
			claims.map((c) => [`${c.metadata.namespace ?? ''}/${c.metadata.name ?? ''}`, c]),
		)
		for (const uid of [...this.#attached.keys()]) {
			if ((this.#holders.get(uid)?.size ?? 0) === 0) await this.#detachIdle(uid)
		}
		const live = new Set(claims.map((c) => c.metadata.uid ?? ''))
		for (const namespace of await readdir(this.root).catch(() => [] as string[])) {
			for (const uid of await readdir(join(this.root, namespace)).catch(() => [] as string[])) {
				if (live.has(uid) || inUse.has(uid) || (this.#holders.get(uid)?.size ?? 0) > 0) continue
				await this.#detachIdle(uid)
				if (this.#attached.has(uid)) continue
				await rm(join(this.root, namespace, uid), { recursive: true, force: true })
				this.#bound.delete(uid)
			}
		}
	}

	/** The claim as last listed (or fetched). */
	async claim(
		namespace: string,
		name: string,
		signal?: AbortSignal,
	): Promise<PersistentVolumeClaim | undefined> {
		const cached = this.#claims.get(`${namespace}/${name}`)
		if (cached) return cached
		try {
			return await this.#client.get<PersistentVolumeClaim>(
				`/api/v1/namespaces/${namespace}/persistentvolumeclaims/${name}`,
				signal,
			)
		} catch (error) {
			if (isStatus(error, 404)) return undefined
			throw error
		}
	}

	/** The loop device a block claim is attached to now, if it is. */
	attachedDevice(uid: string): string | undefined {
		return this.#attached.get(uid)?.device
	}

	/**
	 * The claim's volume for pod `holder` about to start — its directory, or its block device
	 * attached (left as it is: the mounter formats it) — binding the claim on first use. The pod holds the
	 * claim until `release(holder)`.
	 */
	async volume(namespace: string, name: string, holder: string): Promise<ClaimVolume> {
		let claim: PersistentVolumeClaim | undefined
		try {
			claim = await this.claim(namespace, name)
		} catch (error) {
			return { ok: false, message: `cannot read persistentvolumeclaim "${name}": ${String(error)}` }
		}
		const uid = claim?.metadata.uid
		if (claim === undefined || uid === undefined) {
			return { ok: false, message: `persistentvolumeclaim "${name}" not found` }
		}
		if (claim.metadata.deletionTimestamp) {
			return { ok: false, message: `persistentvolumeclaim "${name}" is being deleted` }
		}
		const path = pvcDirectoryPath(this.root, namespace, uid)
		const block = isBlockClaim(claim)
		const size = block ? blockClaimSize(claim) : undefined
		if (size !== undefined && !size.ok) return { ok: false, message: size.message }
		let holders = this.#holders.get(uid)
		if (holders === undefined) {
			holders = new Set()
			this.#holders.set(uid, holders)
		}
		holders.add(holder)
		await mkdir(path, { recursive: true })
		let device: string | undefined
		if (size !== undefined) {
			try {
				device = await this.#serial(uid, () =>
					this.#attach(uid, join(path, BLOCK_DISK_FILE), size.bytes),
				)
			} catch (error) {
				return {
					ok: false,
					message: `cannot attach block persistentvolumeclaim "${name}": ${error instanceof Error ? error.message : String(error)}`,
				}
			}
		}
		if (!this.#bound.has(uid) && claim.status?.phase !== 'Bound') {
			try {
				await this.#client.patch(
					`/api/v1/namespaces/${namespace}/persistentvolumeclaims/${name}/status`,
					'merge',
					{
						status: {
							phase: 'Bound',
							accessModes: claim.spec?.accessModes ?? ['ReadWriteOnce'],
							capacity: {
								storage: size?.capacity ?? claim.spec?.resources?.requests?.storage ?? '1Gi',
							},
						},
					},
				)
			} catch (error) {
				return {
					ok: false,
					message: `cannot bind persistentvolumeclaim "${name}": ${String(error)}`,
				}
			}
		}
		this.#bound.add(uid)
		return device === undefined
			? { ok: true, kind: 'directory', uid, path }
			: { ok: true, kind: 'block', uid, device }
	}

	async #attach(uid: string, file: string, bytes: number): Promise<string> {
		const attached = this.#attached.get(uid)
		if (attached !== undefined) return attached.device
		await ensureSparseFile(file, bytes)
		// Not formatted here: whoever mounts it does (the pod runtime standing in for the entrypoint,
		// or the guest image's own entrypoint in a privileged container).
		const device = await attachLoop(file, this.#loopRegistry)
		this.#attached.set(uid, { device, file })
		return device
	}

	async #detachIdle(uid: string): Promise<void> {
		await this.#serial(uid, async () => {
			const attached = this.#attached.get(uid)
			if (attached === undefined || (this.#holders.get(uid)?.size ?? 0) > 0) return
			await detachLoop(attached.device, attached.file, this.#loopRegistry)
			this.#attached.delete(uid)
		})
	}

	/** Pod `holder` no longer uses its claims (its disks are unmounted): idle disks are detached. */
	async release(holder: string): Promise<void> {
		const idle: string[] = []
		for (const [uid, holders] of this.#holders) {
			if (holders.delete(holder) && holders.size === 0) idle.push(uid)
		}
		for (const uid of idle) {
			this.#holders.delete(uid)
			await this.#detachIdle(uid).catch(() => undefined)
		}
	}

	/** Detaches every disk (kubelet stop, after every pod has been released). */
	async stop(): Promise<void> {
		this.#holders.clear()
		for (const uid of [...this.#attached.keys()]) await this.#detachIdle(uid).catch(() => undefined)
	}
}
