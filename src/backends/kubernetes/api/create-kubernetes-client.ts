/**
 * `createKubernetesClient(access, options?)`: resolves the access once (refusing what cannot work
 * before any request), picks the transport (`fetch` unless TLS material is involved, then
 * `node:https`), and runs every request under its own bound. A request ends in exactly one of:
 * the parsed 2xx body, the classified API error, `KubernetesApiError` with `transport: 'connect'`,
 * `KubernetesApiTimeoutError` (the bound expired — during `getToken()`, connect or body), or the
 * caller's own abort reason, unchanged.
 */

import { raceSignal } from '../../../common/bounded-promise.js'
import {
	KubernetesApiError,
	KubernetesApiTimeoutError,
	type KubernetesHttpMethod,
} from './api-errors.js'
import { resolveApiRequestTimeoutMs } from './api-request-timeout.js'
import { type ApiTransport, type ApiTransportResponse, apiTransports } from './api-transport.js'
import {
	classifyKubernetesFailure,
	kubernetesFailureError,
	parseResponseBody,
} from './classify-kubernetes-failure.js'
import { type KubernetesAccess, resolveKubernetesAccess } from './kubernetes-access.js'
import type {
	KubernetesClient,
	KubernetesClientOptions,
	KubernetesDeleteOptions,
	KubernetesList,
	KubernetesListOptions,
	KubernetesPatchType,
	KubernetesQuery,
	KubernetesRequest,
	KubernetesResponse,
} from './kubernetes-client.js'
import { watchCollection } from './kubernetes-watch.js'
import { armRequestDeadline } from './request-deadline.js'

const PATCH_CONTENT_TYPE: Readonly<Record<KubernetesPatchType, string>> = {
	merge: 'application/merge-patch+json',
	json: 'application/json-patch+json',
	strategic: 'application/strategic-merge-patch+json',
}

/** What every request of one client shares. */
interface ClientBasis {
	readonly server: string
	readonly transport: ApiTransport
	readonly timeoutMs: number
	readonly headersFor: (signal: AbortSignal) => Promise<Record<string, string>>
}

export function createKubernetesClient(
	access: KubernetesAccess,
	options: KubernetesClientOptions = {},
): KubernetesClient {
	const timeoutMs = resolveApiRequestTimeoutMs(options.apiRequestTimeoutMs)
	const resolved = resolveKubernetesAccess(access, options.environment)
	const transports = apiTransports(resolved.tls, options.fetch ?? ((url, init) => fetch(url, init)))

	async function headersFor(signal: AbortSignal): Promise<Record<string, string>> {
		const token = await raceSignal(resolved.token(signal), signal)
		const headers: Record<string, string> = { accept: 'application/json' }
		if (token !== undefined) headers.authorization = `Bearer ${token}`
		return headers
	}

	const basis: ClientBasis = {
		server: resolved.server,
		transport: transports.whole,
		timeoutMs,
		headersFor,
	}
	const request = <T>(req: KubernetesRequest): Promise<KubernetesResponse<T>> =>
		requestWithin<T>(basis, req)

	const call = async <T>(
		method: KubernetesHttpMethod,
		path: string,
		extra: Omit<KubernetesRequest, 'method' | 'path'>,
	): Promise<T> => (await request<T>({ method, path, ...extra })).body

	return {
		server: resolved.server,
		namespace: resolved.namespace,
		apiRequestTimeoutMs: timeoutMs,
		request,
		get: (path, opts = {}) => call('GET', path, signalOf(opts.signal)),
		list: <T>(path: string, opts: KubernetesListOptions = {}) =>
			call<KubernetesList<T>>('GET', path, {
				query: {
					labelSelector: labelSelectorText(opts.labelSelector),
					fieldSelector: opts.fieldSelector,
					limit: opts.limit,
					continue: opts.continue,
				},
				...signalOf(opts.signal),
			}),
		create: (path, body, opts = {}) => call('POST', path, { body, ...signalOf(opts.signal) }),
		mergePatch: (path, patch, opts = {}) =>
			call('PATCH', path, { body: patch, patchType: 'merge', ...signalOf(opts.signal) }),
		jsonPatch: (path, operations, opts = {}) =>
			call('PATCH', path, { body: operations, patchType: 'json', ...signalOf(opts.signal) }),
		delete: (path, opts = {}) =>
			call('DELETE', path, { body: deleteOptionsBody(opts), ...signalOf(opts.signal) }),
		watch: (path, opts = {}) =>
			watchCollection(
				{
					server: resolved.server,
					timeoutMs,
					stream: transports.stream,
					headers: headersFor,
					queryString,
				},
				path,
				opts,
			),
	}
}

/** One request under its own bound: the caller's abort reason unchanged, or the bound's error. */
async function requestWithin<T>(
	basis: ClientBasis,
	req: KubernetesRequest,
): Promise<KubernetesResponse<T>> {
	const { method, path } = req
	if (!path.startsWith('/')) throw new TypeError(`kubernetes path must start with '/': ${path}`)
	if (method === 'PATCH' && req.patchType === undefined) {
		throw new TypeError('kubernetes PATCH needs a patchType')
	}
	const deadline = armRequestDeadline(basis.timeoutMs, req.signal)
	try {
		return await exchange<T>(basis, req, deadline.signal)
	} catch (error) {
		if (deadline.expired()) throw new KubernetesApiTimeoutError(method, path, basis.timeoutMs)
		if (req.signal?.aborted) throw req.signal.reason
		throw error
	} finally {
		deadline.dispose()
	}
}

/** The request sent and its answer read: the 2xx body, or the classified failure. */
async function exchange<T>(
	basis: ClientBasis,
	req: KubernetesRequest,
	signal: AbortSignal,
): Promise<KubernetesResponse<T>> {
	const { method, path } = req
	const headers = await basis.headersFor(signal)
	const payload = req.body === undefined ? undefined : JSON.stringify(req.body)
	if (payload !== undefined) {
		headers['content-type'] =
			req.patchType === undefined ? 'application/json' : PATCH_CONTENT_TYPE[req.patchType]
	}
	let response: ApiTransportResponse
	try {
		response = await basis.transport({
			method,
			url: `${basis.server}${path}${queryString(req.query)}`,
			headers,
			signal,
			...(payload === undefined ? {} : { body: payload }),
		})
	} catch (error) {
		if (signal.aborted) throw error
		throw new KubernetesApiError({
			verb: method,
			path,
			transport: 'connect',
			retryable: true,
			cause: error,
		})
	}
	const body = parseResponseBody(response.text)
	if (response.status < 200 || response.status >= 300) {
		const failure = classifyKubernetesFailure(response.status, body, response.headers)
		throw kubernetesFailureError(method, path, failure, isConditionalPatch(req))
	}
	return { status: response.status, body: body as T, headers: response.headers }
}

function signalOf(signal: AbortSignal | undefined): { signal?: AbortSignal } {
	return signal === undefined ? {} : { signal }
}

/** `?a=b&c=d` for the defined entries; empty when none. */
export function queryString(query: KubernetesQuery | undefined): string {
	if (query === undefined) return ''
	const params = new URLSearchParams()
	for (const [key, value] of Object.entries(query)) {
		if (value !== undefined && value !== '') params.set(key, String(value))
	}
	const text = params.toString()
	return text === '' ? '' : `?${text}`
}

/** `{ a: 'b', c: 'd' }` → `a=b,c=d`; a string passes through. */
export function labelSelectorText(
	selector: string | Readonly<Record<string, string>> | undefined,
): string | undefined {
	if (selector === undefined || typeof selector === 'string') return selector
	return Object.entries(selector)
		.map(([key, value]) => `${key}=${value}`)
		.join(',')
}

/** The `DeleteOptions` body, or undefined when the caller set nothing (no body is sent). */
export function deleteOptionsBody(options: KubernetesDeleteOptions): object | undefined {
	const { propagationPolicy, preconditions, gracePeriodSeconds } = options
	if (
		propagationPolicy === undefined &&
		preconditions === undefined &&
		gracePeriodSeconds === undefined
	) {
		return undefined
	}
	return {
		apiVersion: 'v1',
		kind: 'DeleteOptions',
		...(propagationPolicy === undefined ? {} : { propagationPolicy }),
		...(gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds }),
		...(preconditions === undefined ? {} : { preconditions }),
	}
}

/** A JSON patch carrying a `test` op: a refusal to apply it means "not applied". */
function isConditionalPatch(req: KubernetesRequest): boolean {
	return (
		req.patchType === 'json' &&
		Array.isArray(req.body) &&
		req.body.some(
			(op: unknown) => typeof op === 'object' && op !== null && 'op' in op && op.op === 'test',
		)
	)
}
