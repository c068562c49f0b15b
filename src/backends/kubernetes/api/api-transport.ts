/**
 * The two ways one request reaches the API server, with the same contract: send, wait for the
 * status and read the whole body, all under `signal` (which the caller's bound aborts). `fetch`
 * (global, or injected for recording tests) is the default; `node:https` is used only when a custom
 * CA or a client certificate is involved, and always verifies the server against that CA.
 */
import { Agent, request as httpsRequest } from 'node:https'
import type { KubernetesHttpMethod } from './api-errors.js'
import type { KubernetesTlsMaterial } from './kubernetes-access.js'

export interface ApiTransportRequest {
	readonly method: KubernetesHttpMethod
	readonly url: string
	readonly headers: Readonly<Record<string, string>>
	readonly body?: string
	readonly signal: AbortSignal
}

export interface ApiTransportResponse {
	readonly status: number
	/** Lower-case names. */
	readonly headers: Readonly<Record<string, string | undefined>>
	readonly text: string
}

export type ApiTransport = (request: ApiTransportRequest) => Promise<ApiTransportResponse>

/** The `fetch` signature the client needs; inject one to record requests. */
export type KubernetesFetch = (url: string, init: RequestInit) => Promise<Response>

export function fetchTransport(fetchImpl: KubernetesFetch): ApiTransport {
	return async (request) => {
		const response = await fetchImpl(request.url, {
			method: request.method,
			headers: request.headers,
			signal: request.signal,
			redirect: 'error',
			...(request.body === undefined ? {} : { body: request.body }),
		})
		const text = await response.text()
		const headers: Record<string, string> = {}
		response.headers.forEach((value, name) => {
			headers[name.toLowerCase()] = value
		})
		return { status: response.status, headers, text }
	}
}

export function httpsTransport(tls: KubernetesTlsMaterial): ApiTransport {
	const agent = new Agent({
		keepAlive: true,
		rejectUnauthorized: true,
		...(tls.ca === undefined ? {} : { ca: tls.ca }),
		...(tls.cert === undefined ? {} : { cert: tls.cert }),
		...(tls.key === undefined ? {} : { key: tls.key }),
		...(tls.servername === undefined ? {} : { servername: tls.servername }),
	})
	return (request) =>
		new Promise<ApiTransportResponse>((resolve, reject) => {
			const { signal } = request
			if (signal.aborted) {
				reject(signal.reason)
				return
			}
			const req = httpsRequest(request.url, {
				method: request.method,
				headers: {
					...request.headers,
					...(request.body === undefined
						? {}
						: { 'content-length': String(Buffer.byteLength(request.body)) }),
				},
				agent,
			})
			const onAbort = (): void => {
				req.destroy()
				reject(signal.reason)
			}
			signal.addEventListener('abort', onAbort, { once: true })
			const settle = (): void => signal.removeEventListener('abort', onAbort)
			req.on('error', (error) => {
				settle()
				reject(error)
			})
			req.on('response', (res) => {
				const chunks: Buffer[] = []
				res.on('data', (chunk: Buffer) => chunks.push(chunk))
				res.on('error', (error) => {
					settle()
					reject(error)
				})
				res.on('aborted', () => {
					settle()
					reject(new Error('the API server closed the response early'))
				})
				res.on('end', () => {
					settle()
					const headers: Record<string, string | undefined> = {}
					for (const [name, value] of Object.entries(res.headers)) {
						headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value
					}
					resolve({
						status: res.statusCode ?? 0,
						headers,
						text: Buffer.concat(chunks).toString('utf8'),
					})
				})
			})
			req.end(request.body)
		})
}
