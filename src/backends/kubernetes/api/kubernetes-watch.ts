/**
 * One watch request: open it under the client's request bound (token, connect, status line), then
 * yield its events as they arrive under the caller's signal alone — a watch lives as long as the
 * caller wants it, up to the `timeoutSeconds` it asked the server for. Leaving the loop early
 * closes the connection. The failures are the client's: a non-2xx opening is the classified API
 * error, a cut connection `KubernetesApiError` with `transport: 'connect'`, an opening that missed
 * the bound `KubernetesApiTimeoutError`, the caller's abort its own reason.
 */
import { raceSignal } from '../../../common/bounded-promise.js'
import { KubernetesApiError, KubernetesApiTimeoutError } from './api-errors.js'
import type { ApiStreamTransport } from './api-transport.js'
import {
	classifyKubernetesFailure,
	kubernetesFailureError,
	parseResponseBody,
} from './classify-kubernetes-failure.js'
import type { KubernetesQuery, KubernetesWatchOptions } from './kubernetes-client.js'
import {
	type KubernetesWatchEvent,
	KubernetesWatchFramingError,
	parseWatchEvent,
	WatchLineSplitter,
} from './watch-events.js'

/** How much of a refused watch's Status body is read to classify it. */
const REFUSAL_BODY_BYTES = 64 * 1024

export interface WatchContext {
	readonly server: string
	readonly timeoutMs: number
	readonly stream: ApiStreamTransport
	readonly headers: (signal: AbortSignal) => Promise<Record<string, string>>
	readonly queryString: (query: KubernetesQuery) => string
}

export async function* watchCollection<T>(
	context: WatchContext,
	path: string,
	options: KubernetesWatchOptions,
): AsyncGenerator<KubernetesWatchEvent<T>> {
	if (!path.startsWith('/')) throw new TypeError(`kubernetes path must start with '/': ${path}`)
	const { signal } = options
	signal?.throwIfAborted()
	const life = new AbortController()
	const onCallerAbort = (): void => life.abort(signal?.reason)
	signal?.addEventListener('abort', onCallerAbort, { once: true })
	let expired = false
	const openBound = setTimeout(() => {
		expired = true
		life.abort(new Error(`request bound of ${context.timeoutMs} ms expired`))
	}, context.timeoutMs)
	try {
		let body: AsyncIterable<Uint8Array>
		try {
			const headers = await raceSignal(context.headers(life.signal), life.signal)
			const query = context.queryString({
				watch: true,
				allowWatchBookmarks: false,
				fieldSelector: options.fieldSelector,
				resourceVersion: options.resourceVersion,
				timeoutSeconds: options.timeoutSeconds,
			})
			let response: Awaited<ReturnType<ApiStreamTransport>>
			try {
				response = await context.stream({
					method: 'GET',
					url: `${context.server}${path}${query}`,
					headers,
					signal: life.signal,
				})
			} catch (error) {
				if (life.signal.aborted) throw error
				throw connectFailure(path, error)
			}
			if (response.status < 200 || response.status >= 300) {
				const text = await readBounded(response.body, REFUSAL_BODY_BYTES)
				const failure = classifyKubernetesFailure(
					response.status,
					parseResponseBody(text),
					response.headers,
				)
				throw kubernetesFailureError('GET', path, failure, false)
			}
			body = response.body
		} finally {
			clearTimeout(openBound)
		}
		const splitter = new WatchLineSplitter()
		try {
			for await (const chunk of body) {
				for (const line of splitter.push(chunk))
					yield parseWatchEvent(line) as KubernetesWatchEvent<T>
			}
		} catch (error) {
			if (life.signal.aborted || !isTransportCut(error)) throw error
			throw connectFailure(path, error)
		}
		const last = splitter.end()
		if (last !== undefined) yield parseWatchEvent(last) as KubernetesWatchEvent<T>
	} catch (error) {
		if (expired) throw new KubernetesApiTimeoutError('GET', path, context.timeoutMs)
		if (signal?.aborted) throw signal.reason
		throw error
	} finally {
		clearTimeout(openBound)
		signal?.removeEventListener('abort', onCallerAbort)
		// Ends the request however the loop was left (done, thrown, or the consumer broke out).
		life.abort()
	}
}

function connectFailure(path: string, cause: unknown): KubernetesApiError {
	return new KubernetesApiError({ verb: 'GET', path, transport: 'connect', retryable: true, cause })
}

/** A framing refusal is its own error; anything else the body threw is the connection. */
function isTransportCut(error: unknown): boolean {
	return !(error instanceof KubernetesWatchFramingError)
}

async function readBounded(body: AsyncIterable<Uint8Array>, limit: number): Promise<string> {
	const chunks: Buffer[] = []
	let size = 0
	for await (const chunk of body) {
		const room = limit - size
		if (room <= 0) break
		const piece = Buffer.from(chunk.buffer, chunk.byteOffset, Math.min(room, chunk.byteLength))
		chunks.push(Buffer.from(piece))
		size += piece.byteLength
	}
	return Buffer.concat(chunks).toString('utf8')
}
