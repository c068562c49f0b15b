/**
 * The Kubernetes API client's surface: options, the low-level request, the verbs and their
 * option shapes. The implementation is create-kubernetes-client.ts. Every verb issues exactly one
 * request — nothing here retries (a create `POST` in particular is never repeated, since a POST
 * whose answer never arrived may already have committed); retrying is the caller's decision.
 */
import type { KubernetesHttpMethod } from './api-errors.js'
import type { KubernetesFetch } from './api-transport.js'
import type { KubernetesAccessEnvironment } from './kubernetes-access.js'
import type { KubernetesWatchEvent } from './watch-events.js'

export interface KubernetesClientOptions {
	/**
	 * Bound on every request — `getToken()`, connect and body together — on top of the caller's
	 * signal. Default `DEFAULT_API_REQUEST_TIMEOUT_MS` (30000); below `MIN_API_REQUEST_TIMEOUT_MS`
	 * (1000) is refused at construction.
	 */
	readonly apiRequestTimeoutMs?: number
	/** `fetch` for the no-custom-TLS path (default the global one); inject to record requests. */
	readonly fetch?: KubernetesFetch
	/** Where the in-cluster and kubeconfig access forms look (tests point these elsewhere). */
	readonly environment?: KubernetesAccessEnvironment
}

/** `merge` = `application/merge-patch+json`, `json` = `application/json-patch+json`. */
export type KubernetesPatchType = 'merge' | 'json' | 'strategic'

export type KubernetesQuery = Readonly<Record<string, string | number | boolean | undefined>>

export interface KubernetesRequest {
	readonly method: KubernetesHttpMethod
	/** Absolute API path, e.g. `/api/v1/namespaces/ns/pods/p`. */
	readonly path: string
	readonly query?: KubernetesQuery
	/** Serialized as JSON. */
	readonly body?: unknown
	/** Required for `PATCH`: picks the content type. */
	readonly patchType?: KubernetesPatchType
	readonly signal?: AbortSignal
}

export interface KubernetesResponse<T = unknown> {
	readonly status: number
	readonly body: T
	/** Lower-case names. */
	readonly headers: Readonly<Record<string, string | undefined>>
}

export interface KubernetesCallOptions {
	readonly signal?: AbortSignal
}

export interface KubernetesListOptions extends KubernetesCallOptions {
	/** `a=b,c!=d` or `{ a: 'b' }` (equality terms joined with commas). */
	readonly labelSelector?: string | Readonly<Record<string, string>>
	readonly fieldSelector?: string
	readonly limit?: number
	readonly continue?: string
}

export interface KubernetesList<T> {
	readonly apiVersion?: string
	readonly kind?: string
	readonly metadata?: { readonly resourceVersion?: string; readonly continue?: string }
	readonly items: readonly T[]
}

/** RFC 6902 operations; `test` makes the whole patch conditional. */
export type JsonPatchOperation =
	| { readonly op: 'add' | 'replace' | 'test'; readonly path: string; readonly value: unknown }
	| { readonly op: 'remove'; readonly path: string }
	| { readonly op: 'move' | 'copy'; readonly from: string; readonly path: string }

export interface KubernetesWatchOptions extends KubernetesCallOptions {
	readonly fieldSelector?: string
	/** Events after this version only (the version a create or read returned). */
	readonly resourceVersion?: string
	/** Asked of the server, which then ends the stream itself. */
	readonly timeoutSeconds?: number
}

export interface KubernetesDeleteOptions extends KubernetesCallOptions {
	readonly propagationPolicy?: 'Foreground' | 'Background' | 'Orphan'
	/** The API server deletes only while these still match; otherwise 409 (KubernetesConflictError). */
	readonly preconditions?: { readonly uid?: string; readonly resourceVersion?: string }
	readonly gracePeriodSeconds?: number
}

export interface KubernetesClient {
	/** Base URL of the API server. */
	readonly server: string
	/** The namespace the access names (in-cluster namespace file, kubeconfig context), if any. */
	readonly namespace: string | undefined
	readonly apiRequestTimeoutMs: number
	/** One request; non-2xx rejects with the classified error (see classify-kubernetes-failure.ts). */
	request<T = unknown>(request: KubernetesRequest): Promise<KubernetesResponse<T>>
	get<T = unknown>(path: string, options?: KubernetesCallOptions): Promise<T>
	list<T = unknown>(path: string, options?: KubernetesListOptions): Promise<KubernetesList<T>>
	/** `POST`; never retried. A 409 `AlreadyExists` rejects with `KubernetesConflictError`. */
	create<T = unknown>(path: string, body: unknown, options?: KubernetesCallOptions): Promise<T>
	mergePatch<T = unknown>(path: string, patch: unknown, options?: KubernetesCallOptions): Promise<T>
	/** A failed `test` op rejects with `KubernetesPatchNotAppliedError`. */
	jsonPatch<T = unknown>(
		path: string,
		operations: readonly JsonPatchOperation[],
		options?: KubernetesCallOptions,
	): Promise<T>
	/** 404/410 rejects with `KubernetesAlreadyGoneError` (count it as deleted). */
	delete<T = unknown>(path: string, options?: KubernetesDeleteOptions): Promise<T>
	/** `GET <collection>?watch=true`: the events as they arrive; see kubernetes-watch.ts. */
	watch<T = unknown>(
		collectionPath: string,
		options?: KubernetesWatchOptions,
	): AsyncIterable<KubernetesWatchEvent<T>>
}
