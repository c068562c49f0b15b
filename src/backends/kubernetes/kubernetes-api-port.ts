/**
 * The few API verbs the task backend issues, as a narrow port: the acquire, the lease, destroy and
 * the fleet verbs are written against this, and `fromKubernetesClient` (client-port.ts) adapts the
 * API client (api/) to it. Every call takes the caller's signal; the client adds its own per-request
 * bound (`apiRequestTimeoutMs`) on top.
 */
import type { JsonPatchOperation } from './api/kubernetes-client.js'
import type { KubernetesWatchEvent } from './api/watch-events.js'
import type { KubernetesList, KubernetesObject } from './kubernetes-objects.js'

export interface KubernetesApiCallOptions {
	readonly signal?: AbortSignal
}

export interface KubernetesListOptions extends KubernetesApiCallOptions {
	readonly labelSelector?: string
	readonly fieldSelector?: string
}

export interface KubernetesDeleteCallOptions extends KubernetesApiCallOptions {
	/** The API server deletes only while these still match; otherwise 409 (`KubernetesConflictError`). */
	readonly preconditions?: { readonly uid?: string; readonly resourceVersion?: string }
}

export interface KubernetesWatchPortOptions extends KubernetesApiCallOptions {
	readonly fieldSelector: string
	/** None: the server sends the current state first, then what changes. */
	readonly resourceVersion?: string
	readonly timeoutSeconds: number
}

export interface KubernetesApiPort {
	get(path: string, options?: KubernetesApiCallOptions): Promise<KubernetesObject>
	list(path: string, options?: KubernetesListOptions): Promise<KubernetesList>
	create(path: string, body: object, options?: KubernetesApiCallOptions): Promise<KubernetesObject>
	mergePatch(
		path: string,
		body: object,
		options?: KubernetesApiCallOptions,
	): Promise<KubernetesObject>
	/** `application/json-patch+json`; a failed `test` op rejects with `KubernetesPatchNotAppliedError`. */
	jsonPatch(
		path: string,
		operations: readonly JsonPatchOperation[],
		options?: KubernetesApiCallOptions,
	): Promise<KubernetesObject>
	/** Resolves when deleted; an object already gone (404/410) also resolves. */
	delete(path: string, options?: KubernetesDeleteCallOptions): Promise<void>
	/** A collection's events (after `resourceVersion` when given); a port without it is polled instead. */
	watch?(
		collectionPath: string,
		options: KubernetesWatchPortOptions,
	): AsyncIterable<KubernetesWatchEvent<KubernetesObject>>
}
