/**
 * PersistentVolumeClaims emulated as directories: `<stateDir>/pvcs/<namespace>/<claim uid>`. A
 * directory is created when a pod on this node first mounts the claim, and the claim is then marked
 * `Bound` through its status subresource (the control plane runs no provisioner; no
 * PersistentVolume object is created and `spec.volumeName` stays empty). The directory outlives
 * every pod and is removed once the claim is gone from the API (after the pvc-protection finalizer
 * lets it go). Keyed by uid, so a claim deleted and re-created under the same name starts empty.
 */
import { mkdir, readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { isStatus, type KubeClient } from './kube-client.js'
import type { PersistentVolumeClaim } from './kube-types.js'

export function pvcDirectoryPath(root: string, namespace: string, uid: string): string {
	return join(root, namespace, uid)
}

export class PvcStore {
	readonly root: string
	readonly #client: KubeClient
	#claims = new Map<string, PersistentVolumeClaim>()
	readonly #bound = new Set<string>()

	constructor(client: KubeClient, root: string) {
		this.#client = client
		this.root = root
	}

	/** The latest full list from the API: cache it and remove directories of vanished claims. */
	async observe(
		claims: readonly PersistentVolumeClaim[],
		inUse: ReadonlySet<string>,
	): Promise<void> {
		this.#claims = new Map(
			claims.map((c) => [`${c.metadata.namespace ?? ''}/${c.metadata.name ?? ''}`, c]),
		)
		const live = new Set(claims.map((c) => c.metadata.uid ?? ''))
		for (const namespace of await readdir(this.root).catch(() => [] as string[])) {
			for (const uid of await readdir(join(this.root, namespace)).catch(() => [] as string[])) {
				if (live.has(uid) || inUse.has(uid)) continue
				await rm(join(this.root, namespace, uid), { recursive: true, force: true })
				this.#bound.delete(uid)
			}
		}
	}

	/** The uid of a claim as last listed (or fetched). */
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

	/** The claim's directory for a pod about to start, binding the claim on first use. */
	async directory(
		namespace: string,
		name: string,
	): Promise<{ ok: true; path: string; uid: string } | { ok: false; message: string }> {
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
		await mkdir(path, { recursive: true })
		if (!this.#bound.has(uid) && claim.status?.phase !== 'Bound') {
			try {
				await this.#client.patch(
					`/api/v1/namespaces/${namespace}/persistentvolumeclaims/${name}/status`,
					'merge',
					{
						status: {
							phase: 'Bound',
							accessModes: claim.spec?.accessModes ?? ['ReadWriteOnce'],
							capacity: { storage: claim.spec?.resources?.requests?.storage ?? '1Gi' },
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
		return { ok: true, path, uid }
	}
}
