// A plain-HTTP front for the test cluster's API server that can APPLY a request and withhold the
// answer: a request matching a `withhold` rule is forwarded over TLS and runs on the real API
// server, its answer is recorded, and the client is never answered — the shape of "the request
// timed out, but it had been applied", which neither a paused proxy nor a refused connection can
// produce. Every other request is forwarded unchanged. The log records each request with the
// status the API server gave it (and whether the client got that answer).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { request as httpsRequest } from 'node:https'
import type { AddressInfo } from 'node:net'
import type { ClusterAccess } from '../../cluster/cluster-access.js'

export interface WithheldMatch {
	readonly method: string
	readonly pathIncludes?: string
}

export interface FrontEntry {
	/** `METHOD /path`. */
	readonly request: string
	/** What the API server answered. */
	readonly status: number
	/** False when the answer was withheld from the client. */
	readonly answered: boolean
}

export interface WithholdingApiFront {
	/** `http://127.0.0.1:<port>`: hand it to the backend as `access.server`. */
	readonly server: string
	readonly log: readonly FrontEntry[]
	/** Applies the next `count` matching requests upstream and never answers the client. */
	withhold(match: WithheldMatch, count?: number): void
	close(): Promise<void>
}

export async function startWithholdingApiFront(
	upstream: ClusterAccess,
): Promise<WithholdingApiFront> {
	const log: FrontEntry[] = []
	const rules: Array<{ match: WithheldMatch; remaining: number }> = []
	const target = new URL(upstream.server)
	const withheld = (method: string, path: string): boolean => {
		const rule = rules.find(
			(entry) =>
				entry.remaining > 0 &&
				entry.match.method === method &&
				(entry.match.pathIncludes === undefined || path.includes(entry.match.pathIncludes)),
		)
		if (rule) rule.remaining -= 1
		return rule !== undefined
	}
	const forward = (incoming: IncomingMessage, outgoing: ServerResponse): void => {
		const method = incoming.method ?? 'GET'
		const path = incoming.url ?? '/'
		const hold = withheld(method, path)
		const upstreamRequest = httpsRequest(
			{
				hostname: target.hostname,
				port: target.port,
				path,
				method,
				headers: { ...incoming.headers, host: target.host },
				...(upstream.caPem === undefined ? {} : { ca: upstream.caPem }),
			},
			(answer) => {
				log.push({ request: `${method} ${path}`, status: answer.statusCode ?? 0, answered: !hold })
				if (hold) {
					answer.resume()
					return
				}
				outgoing.writeHead(answer.statusCode ?? 502, answer.headers)
				answer.pipe(outgoing)
			},
		)
		upstreamRequest.on('error', () => outgoing.destroy())
		// A withheld request runs to completion upstream even after the client gave up on it.
		if (!hold) incoming.on('aborted', () => upstreamRequest.destroy())
		incoming.pipe(upstreamRequest)
	}
	const server: Server = createServer(forward)
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
	const { port } = server.address() as AddressInfo
	return {
		server: `http://127.0.0.1:${port}`,
		get log() {
			return log
		},
		withhold: (match, count = 1) => {
			rules.push({ match, remaining: count })
		},
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections()
				server.close(() => resolve())
			}),
	}
}
