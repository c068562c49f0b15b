/**
 * The two ways one request reaches the API server, with the same contract: send, wait for the
 * status and read the whole body, all under `signal` (which the caller's bound aborts). `fetch`
 * (global, or injected for recording tests) is the default; `node:https` is used only when a custom
 * CA or a client certificate is involved, and always verifies the server against that CA. Each way
 * also opens a streamed response (a watch): the status and headers, then the body as it arrives,
 * until `signal` aborts or the server ends it.
 */
import type { IncomingMessage } from 'node:http'
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

export interface ApiStreamResponse {
	readonly status: number
	/** Lower-case names. */
	readonly headers: Readonly<Record<string, string | undefined>>
	/** The body as it arrives; ends with the response, fails when it is cut or `signal` aborts. */
	readonly body: AsyncIterable<Uint8Array>
}

export type ApiStreamTransport = (request: ApiTransportRequest) => Promise<ApiStreamResponse>

export interface ApiTransports {
	readonly whole: ApiTransport
	readonly stream: ApiStreamTransport
}

/** Both ways for `fetch`, or both over one keep-alive agent for custom TLS. */
export function apiTransports(
	tls: KubernetesTlsMaterial | undefined,
	fetchImpl: KubernetesFetch,
): ApiTransports {
	if (tls === undefined) {
		return { whole: fetchTransport(fetchImpl), stream: fetchStreamTransport(fetchImpl) }
	}
	const agent = httpsAgent(tls)
	return { whole: httpsTransport(agent), stream: httpsStreamTransport(agent) }
}

/** The `fetch` signature the client needs; inject one to record requests. */
export type KubernetesFetch = (url: string, init: RequestInit) => Promise<Response>

function fetchInit(request: ApiTransportRequest): RequestInit {
	return {
		method: request.method,
		headers: request.headers,
		signal: request.signal,
		redirect: 'error',
		...(request.body === undefined ? {} : { body: request.body }),
	}
}

function fetchHeaders(response: Response): Record<string, string> {
	const headers: Record<string, string> = {}
	response.headers.forEach((value, name) => {
		headers[name.toLowerCase()] = value
	})
	return headers
}

export function fetchTransport(fetchImpl: KubernetesFetch): ApiTransport {
	return async (request) => {
		const response = await fetchImpl(request.url, fetchInit(request))
		const text = await response.text()
		return { status: response.status, headers: fetchHeaders(response), text }
	}
}

export function fetchStreamTransport(fetchImpl: KubernetesFetch): ApiStreamTransport {
	return async (request) => {
		const response = await fetchImpl(request.url, fetchInit(request))
		const stream = response.body
		return {
			status: response.status,
			headers: fetchHeaders(response),
			body: stream === null ? emptyBody() : (stream as AsyncIterable<Uint8Array>),
		}
	}
}

async function* emptyBody(): AsyncGenerator<Uint8Array> {}

function httpsAgent(tls: KubernetesTlsMaterial): Agent {
	return new Agent({
		keepAlive: true,
		rejectUnauthorized: true,
		...(tls.ca === undefined ? {} : { ca: tls.ca }),
		...(tls.cert === undefined ? {} : { cert: tls.cert }),
		...(tls.key === undefined ? {} : { key: tls.key }),
		...(tls.servername === undefined ? {} : { servername: tls.servername }),
	})
}

function responseHeaders(res: IncomingMessage): Record<string, string | undefined> {
	const headers: Record<string, string | undefined> = {}
	for (const [name, value] of Object.entries(res.headers)) {
		headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value
	}
	return headers
}

function sendHttps(
	agent: Agent,
	request: ApiTransportRequest,
	onResponse: (res: IncomingMessage, settle: () => void) => void,
	reject: (error: unknown) => void,
): void {
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
	req.on('response', (res) => onResponse(res, settle))
	req.end(request.body)
}

function httpsStreamTransport(agent: Agent): ApiStreamTransport {
	return (request) =>
		new Promise<ApiStreamResponse>((resolve, reject) => {
			sendHttps(
				agent,
				request,
				(res, settle) => {
					// The body's own iteration fails on a cut; abort still destroys the request.
					res.on('end', settle)
					res.on('close', settle)
					resolve({
						status: res.statusCode ?? 0,
						headers: responseHeaders(res),
						body: res as AsyncIterable<Uint8Array>,
					})
				},
				reject,
			)
		})
}

function httpsTransport(agent: Agent): ApiTransport {
	return (request) =>
		new Promise<ApiTransportResponse>((resolve, reject) => {
			sendHttps(
				agent,
				request,
				(res, settle) => {
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
						resolve({
							status: res.statusCode ?? 0,
							headers: responseHeaders(res),
							text: Buffer.concat(chunks).toString('utf8'),
						})
					})
				},
				reject,
			)
		})
}
