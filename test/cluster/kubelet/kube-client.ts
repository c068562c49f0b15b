/**
 * The kubelet's HTTP client for the API server: `node:https` with the cluster CA (Node's `fetch`
 * cannot take one), a bearer token, a keep-alive agent (the kubelet polls every 200 ms), a timeout
 * on every request so a paused or frozen API server never wedges the sync loop, and an
 * `AbortSignal`. Non-2xx answers become `KubeApiError` with the status; the token never appears in
 * a message.
 */
import { Agent as HttpAgent, request as httpRequest } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'
import { KubeApiError } from './kubelet-errors.js'

export interface ClusterAccess {
	readonly server: string
	readonly token: string
	readonly caPem?: string
}

export const DEFAULT_REQUEST_TIMEOUT_MS = 5_000

export type PatchKind = 'merge' | 'strategic' | 'json'

const PATCH_TYPES: Record<PatchKind, string> = {
	merge: 'application/merge-patch+json',
	strategic: 'application/strategic-merge-patch+json',
	json: 'application/json-patch+json',
}

export interface KubeRequestOptions {
	readonly body?: unknown
	readonly contentType?: string
	readonly signal?: AbortSignal
	readonly timeoutMs?: number
}

function statusMessage(text: string): string {
	try {
		const parsed: unknown = JSON.parse(text)
		if (parsed !== null && typeof parsed === 'object' && 'message' in parsed) {
			return String((parsed as { message: unknown }).message)
		}
	} catch {
		// Not JSON.
	}
	return text.slice(0, 300)
}

/** JSON when the body is JSON (every API object); the raw text otherwise (`/readyz`'s `ok`). */
function parseBody(text: string): unknown {
	if (text === '') return undefined
	try {
		return JSON.parse(text)
	} catch {
		return text
	}
}

export class KubeClient {
	readonly #access: ClusterAccess
	readonly #agent: HttpAgent
	readonly #secure: boolean

	constructor(access: ClusterAccess) {
		this.#access = access
		this.#secure = new URL(access.server).protocol === 'https:'
		this.#agent = this.#secure
			? new HttpsAgent({
					keepAlive: true,
					maxSockets: 8,
					...(access.caPem ? { ca: access.caPem } : {}),
				})
			: new HttpAgent({ keepAlive: true, maxSockets: 8 })
	}

	request<T>(method: string, path: string, options: KubeRequestOptions = {}): Promise<T> {
		const url = new URL(path, this.#access.server)
		const payload = options.body === undefined ? undefined : JSON.stringify(options.body)
		const timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS
		const send = this.#secure ? httpsRequest : httpRequest
		return new Promise<T>((resolve, reject) => {
			if (options.signal?.aborted) {
				reject(new KubeApiError('aborted', undefined, `${method} ${url.pathname} aborted`))
				return
			}
			const req = send(
				url,
				{
					method,
					agent: this.#agent,
					headers: {
						authorization: `Bearer ${this.#access.token}`,
						accept: 'application/json',
						...(payload === undefined
							? {}
							: {
									'content-type': options.contentType ?? 'application/json',
									'content-length': Buffer.byteLength(payload),
								}),
					},
				},
				(res) => {
					const chunks: Buffer[] = []
					res.on('data', (chunk: Buffer) => chunks.push(chunk))
					res.on('error', (error) =>
						reject(
							new KubeApiError(
								'unreachable',
								undefined,
								`${method} ${url.pathname}: ${error.message}`,
								{ cause: error },
							),
						),
					)
					res.on('end', () => {
						cleanup()
						const text = Buffer.concat(chunks).toString('utf8')
						const status = res.statusCode ?? 0
						if (status >= 200 && status < 300) {
							resolve(parseBody(text) as T)
						} else {
							reject(
								new KubeApiError(
									'status',
									status,
									`${method} ${url.pathname} → ${status}: ${statusMessage(text)}`,
								),
							)
						}
					})
				},
			)
			const timer = setTimeout(() => {
				req.destroy(
					new KubeApiError(
						'timeout',
						undefined,
						`${method} ${url.pathname} timed out after ${timeoutMs} ms`,
					),
				)
			}, timeoutMs)
			const onAbort = () =>
				req.destroy(new KubeApiError('aborted', undefined, `${method} ${url.pathname} aborted`))
			options.signal?.addEventListener('abort', onAbort, { once: true })
			const cleanup = () => {
				clearTimeout(timer)
				options.signal?.removeEventListener('abort', onAbort)
			}
			req.on('error', (error) => {
				cleanup()
				reject(
					error instanceof KubeApiError
						? error
						: new KubeApiError(
								'unreachable',
								undefined,
								`${method} ${url.pathname}: ${error.message}`,
								{
									cause: error,
								},
							),
				)
			})
			if (payload !== undefined) req.write(payload)
			req.end()
		})
	}

	get<T>(path: string, signal?: AbortSignal): Promise<T> {
		return this.request<T>('GET', path, { ...(signal ? { signal } : {}) })
	}

	post<T>(path: string, body: unknown, signal?: AbortSignal): Promise<T> {
		return this.request<T>('POST', path, { body, ...(signal ? { signal } : {}) })
	}

	patch<T>(path: string, kind: PatchKind, body: unknown, signal?: AbortSignal): Promise<T> {
		return this.request<T>('PATCH', path, {
			body,
			contentType: PATCH_TYPES[kind],
			...(signal ? { signal } : {}),
		})
	}

	delete<T>(path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
		return this.request<T>('DELETE', path, {
			...(body === undefined ? {} : { body }),
			...(signal ? { signal } : {}),
		})
	}

	close(): void {
		this.#agent.destroy()
	}
}

/** Whether an error is the API server's 404 (or 409 when `conflictToo`). */
export function isStatus(error: unknown, ...statuses: number[]): boolean {
	return (
		error instanceof KubeApiError && error.status !== undefined && statuses.includes(error.status)
	)
}
