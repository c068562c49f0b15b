// A minimal JSON client for the Kubernetes API over node:https (custom CA, bearer token) used by
// the harness and by cluster tests: enough for CRDs, namespaces, custom resources and pods. It is a
// test helper, not the product's client — the backend under test brings its own.
import { request } from 'node:https'
import type { ClusterAccess } from './cluster-access.js'

export interface KubeResponse {
	readonly status: number
	readonly body: unknown
}

export class KubeApiError extends Error {
	override readonly name = 'KubeApiError'
	readonly reason = 'api-error'
	readonly retryable: boolean
	constructor(
		readonly method: string,
		readonly path: string,
		readonly status: number,
		readonly body: unknown,
	) {
		super(`${method} ${path} → ${status}: ${statusMessage(body)}`)
		this.retryable = status === 429 || status >= 500
	}
}

function statusMessage(body: unknown): string {
	if (typeof body === 'object' && body !== null && 'message' in body) {
		const message = (body as { message: unknown }).message
		if (typeof message === 'string') return message
	}
	return typeof body === 'string' ? body.slice(0, 300) : (JSON.stringify(body)?.slice(0, 300) ?? '')
}

export type PatchType = 'merge' | 'json' | 'strategic' | 'apply'

const patchContentType: Record<PatchType, string> = {
	merge: 'application/merge-patch+json',
	json: 'application/json-patch+json',
	strategic: 'application/strategic-merge-patch+json',
	apply: 'application/apply-patch+yaml',
}

export interface RequestOptions {
	readonly body?: unknown
	readonly contentType?: string
	readonly signal?: AbortSignal
	readonly timeoutMs?: number
}

export class KubeApi {
	constructor(readonly access: ClusterAccess) {}

	/** One request; resolves with any status (no throw on 4xx/5xx). */
	send(method: string, path: string, options: RequestOptions = {}): Promise<KubeResponse> {
		const url = new URL(path, this.access.server)
		const payload = options.body === undefined ? undefined : JSON.stringify(options.body)
		return new Promise((resolve, reject) => {
			const req = request(
				url,
				{
					method,
					ca: this.access.caPem,
					headers: {
						authorization: `Bearer ${this.access.token}`,
						accept: 'application/json',
						...(payload === undefined
							? {}
							: {
									'content-type': options.contentType ?? 'application/json',
									'content-length': Buffer.byteLength(payload),
								}),
					},
					signal: options.signal,
					timeout: options.timeoutMs ?? 30_000,
				},
				(res) => {
					const chunks: Buffer[] = []
					res.on('data', (chunk: Buffer) => chunks.push(chunk))
					res.on('error', reject)
					res.on('end', () => {
						const text = Buffer.concat(chunks).toString('utf8')
						let body: unknown = text
						try {
							body = text === '' ? undefined : JSON.parse(text)
						} catch {
							// not JSON: keep the text
						}
						resolve({ status: res.statusCode ?? 0, body })
					})
				},
			)
			req.on('timeout', () => req.destroy(new Error(`${method} ${path} timed out`)))
			req.on('error', reject)
			req.end(payload)
		})
	}

	/** A request that must succeed (2xx); returns the parsed body. */
	async call<T = unknown>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
		const response = await this.send(method, path, options)
		if (response.status < 200 || response.status >= 300) {
			throw new KubeApiError(method, path, response.status, response.body)
		}
		return response.body as T
	}

	get<T = unknown>(path: string, signal?: AbortSignal): Promise<T> {
		return this.call<T>('GET', path, { signal })
	}

	/** GET that resolves `undefined` on 404. */
	async find<T = unknown>(path: string, signal?: AbortSignal): Promise<T | undefined> {
		const response = await this.send('GET', path, { signal })
		if (response.status === 404) return undefined
		if (response.status < 200 || response.status >= 300) {
			throw new KubeApiError('GET', path, response.status, response.body)
		}
		return response.body as T
	}

	create<T = unknown>(path: string, body: unknown, signal?: AbortSignal): Promise<T> {
		return this.call<T>('POST', path, { body, signal })
	}

	patch<T = unknown>(
		path: string,
		body: unknown,
		type: PatchType,
		signal?: AbortSignal,
	): Promise<T> {
		return this.call<T>('PATCH', path, { body, contentType: patchContentType[type], signal })
	}

	/** DELETE that treats 404 as already gone. */
	async remove(path: string, body?: unknown, signal?: AbortSignal): Promise<void> {
		const response = await this.send('DELETE', path, { body, signal })
		if (response.status === 404) return
		if (response.status < 200 || response.status >= 300) {
			throw new KubeApiError('DELETE', path, response.status, response.body)
		}
	}
}
