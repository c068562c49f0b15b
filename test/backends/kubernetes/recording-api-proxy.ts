// A plain-HTTP recording front for the test cluster's API server: the backend under test talks
// `http://127.0.0.1:<port>` through the platform `fetch` (no custom CA on that path), every
// request is logged as `METHOD /path?query` and forwarded over TLS with the cluster's CA. The log
// is what the request-log test pins; the forwarding changes nothing else (status, headers, body).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { request as httpsRequest } from 'node:https'
import type { AddressInfo } from 'node:net'
import type { ClusterAccess } from '../../cluster/cluster-access.js'

export interface RecordingApiProxy {
	/** `http://127.0.0.1:<port>`: hand it to the backend as `access.server`. */
	readonly server: string
	/** Every request received, in arrival order: `METHOD /path?query`. */
	readonly requests: readonly string[]
	/** `performance.now()` at each request's arrival, index for index with `requests`. */
	readonly arrivals: readonly number[]
	/** Forget what was recorded so far. */
	clear(): void
	close(): Promise<void>
}

export async function startRecordingApiProxy(upstream: ClusterAccess): Promise<RecordingApiProxy> {
	const requests: string[] = []
	const arrivals: number[] = []
	const target = new URL(upstream.server)
	const forward = (incoming: IncomingMessage, outgoing: ServerResponse): void => {
		const path = incoming.url ?? '/'
		requests.push(`${incoming.method ?? 'GET'} ${path}`)
		arrivals.push(performance.now())
		const headers = { ...incoming.headers, host: target.host }
		const upstreamRequest = httpsRequest(
			{
				hostname: target.hostname,
				port: target.port,
				path,
				method: incoming.method,
				headers,
				...(upstream.caPem === undefined ? {} : { ca: upstream.caPem }),
			},
			(answer) => {
				outgoing.writeHead(answer.statusCode ?? 502, answer.headers)
				answer.pipe(outgoing)
			},
		)
		upstreamRequest.on('error', () => outgoing.destroy())
		incoming.on('aborted', () => upstreamRequest.destroy())
		incoming.pipe(upstreamRequest)
	}
	const server: Server = createServer(forward)
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
	const { port } = server.address() as AddressInfo
	return {
		server: `http://127.0.0.1:${port}`,
		get requests() {
			return requests
		},
		get arrivals() {
			return arrivals
		},
		clear: () => {
			requests.length = 0
			arrivals.length = 0
		},
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections()
				server.close(() => resolve())
			}),
	}
}
