// A TLS-terminating proxy in front of the API server for fault injection. Clients that should see
// faults use `proxy.access` (same token and CA, the proxy's address); everything else — the
// controller, the kubelet — keeps talking to the API server directly. Faults:
//  - pause(): new connections are accepted at TCP level and never answered (not even the TLS
//    handshake), and requests on already-open connections are held unanswered, until resume();
//    held work then proceeds, as a SIGSTOP'd-and-continued server would.
//  - respondWith({ status, count, match }): the next `count` matching requests get a Kubernetes
//    `Status` error (429 with Retry-After, 500, 503, …) instead of being forwarded.
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createServer as createHttpsServer, request as httpsRequest } from 'node:https'
import { createServer as createNetServer, type Server, type Socket } from 'node:net'
import type { ClusterAccess } from './cluster-access.js'

export interface ApiFaultMatch {
	/** HTTP method, e.g. 'PATCH'; any when omitted. */
	readonly method?: string
	/** Substring of the request path (with query), e.g. '/sandboxclaims'; any when omitted. */
	readonly pathIncludes?: string
}

export interface ApiFaultRule {
	/** HTTP status to answer with (429, 500, 503, …). */
	readonly status: number
	/** How many matching requests to fail; default 1. `Number.POSITIVE_INFINITY` = until cleared. */
	readonly count?: number
	readonly match?: ApiFaultMatch
	/** Sent as `Retry-After` (and in the Status details) when set. */
	readonly retryAfterSeconds?: number
}

export interface ApiFaultHandle {
	/** How many requests this rule has answered so far. */
	readonly hits: number
	/** Requests (method + path) this rule answered, in order. */
	readonly requests: readonly string[]
	/** Stops the rule early. */
	clear(): void
}

export interface ApiPauseHandle {
	resume(): void
}

interface ActiveRule {
	readonly rule: ApiFaultRule
	remaining: number
	hits: number
	readonly requests: string[]
}

const statusReason: Record<number, string> = {
	409: 'Conflict',
	429: 'TooManyRequests',
	500: 'InternalError',
	503: 'ServiceUnavailable',
	504: 'Timeout',
}

/** The Kubernetes `Status` body the API server itself sends for such an error. Pure. */
export function faultStatusBody(status: number, retryAfterSeconds?: number): object {
	return {
		kind: 'Status',
		apiVersion: 'v1',
		metadata: {},
		status: 'Failure',
		message: `injected fault: HTTP ${status}`,
		reason: statusReason[status] ?? 'InternalError',
		...(retryAfterSeconds === undefined ? {} : { details: { retryAfterSeconds } }),
		code: status,
	}
}

export function ruleMatches(
	match: ApiFaultMatch | undefined,
	method: string,
	path: string,
): boolean {
	if (match === undefined) return true
	if (match.method !== undefined && match.method.toUpperCase() !== method.toUpperCase())
		return false
	if (match.pathIncludes !== undefined && !path.includes(match.pathIncludes)) return false
	return true
}

export interface ApiFaultProxyOptions {
	readonly upstream: ClusterAccess
	/** Serving certificate and key the proxy presents (verifiable with `upstream.caPem`). */
	readonly certPem: string
	readonly keyPem: string
	readonly signal?: AbortSignal
}

export class ApiFaultProxy {
	private readonly rules: ActiveRule[] = []
	private readonly heldSockets: Socket[] = []
	private readonly heldRequests: Array<() => void> = []
	private readonly sockets = new Set<Socket>()
	private paused = false

	private constructor(
		private readonly upstream: ClusterAccess,
		private readonly listener: Server,
		private readonly tls: ReturnType<typeof createHttpsServer>,
		readonly access: ClusterAccess,
	) {}

	static async start(options: ApiFaultProxyOptions): Promise<ApiFaultProxy> {
		options.signal?.throwIfAborted()
		const tls = createHttpsServer({ cert: options.certPem, key: options.keyPem })
		const listener = createNetServer()
		await new Promise<void>((resolve, reject) => {
			listener.once('error', reject)
			listener.listen(0, '127.0.0.1', () => resolve())
		})
		const address = listener.address()
		const port = typeof address === 'object' && address !== null ? address.port : 0
		const access: ClusterAccess = {
			...options.upstream,
			server: `https://127.0.0.1:${port}`,
		}
		const proxy = new ApiFaultProxy(options.upstream, listener, tls, access)
		listener.on('connection', (socket) => proxy.accept(socket))
		tls.on('request', (req, res) => proxy.handle(req, res))
		tls.on('tlsClientError', () => {})
		return proxy
	}

	private accept(socket: Socket): void {
		this.sockets.add(socket)
		socket.on('close', () => this.sockets.delete(socket))
		socket.on('error', () => {})
		if (this.paused) this.heldSockets.push(socket)
		else this.tls.emit('connection', socket)
	}

	private handle(req: IncomingMessage, res: ServerResponse): void {
		const run = (): void => this.answer(req, res)
		if (this.paused) this.heldRequests.push(run)
		else run()
	}

	private answer(req: IncomingMessage, res: ServerResponse): void {
		const method = req.method ?? 'GET'
		const path = req.url ?? '/'
		const active = this.rules.find(
			(entry) => entry.remaining > 0 && ruleMatches(entry.rule.match, method, path),
		)
		if (active) {
			active.remaining -= 1
			active.hits += 1
			active.requests.push(`${method} ${path}`)
			const { status, retryAfterSeconds } = active.rule
			req.resume()
			res.writeHead(status, {
				'content-type': 'application/json',
				...(retryAfterSeconds === undefined ? {} : { 'retry-after': String(retryAfterSeconds) }),
			})
			res.end(JSON.stringify(faultStatusBody(status, retryAfterSeconds)))
			return
		}
		const target = new URL(path, this.upstream.server)
		const headers = { ...req.headers, host: target.host }
		const upstreamReq = httpsRequest(
			target,
			{ method, headers, ca: this.upstream.caPem },
			(upstreamRes) => {
				res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.headers)
				upstreamRes.pipe(res)
			},
		)
		upstreamReq.on('error', (error) => {
			if (!res.headersSent) {
				res.writeHead(502, { 'content-type': 'text/plain' })
				res.end(`proxy: upstream error: ${error.message}`)
			} else res.destroy()
		})
		res.on('close', () => upstreamReq.destroy())
		req.pipe(upstreamReq)
	}

	/** Stop answering: connections are accepted and never served until `resume()`. */
	pause(): ApiPauseHandle {
		this.paused = true
		return { resume: () => this.resume() }
	}

	resume(): void {
		if (!this.paused) return
		this.paused = false
		const tlsTargets = this.heldSockets.splice(0)
		const requests = this.heldRequests.splice(0)
		for (const socket of tlsTargets) {
			if (!socket.destroyed) this.tls.emit('connection', socket)
		}
		for (const run of requests) run()
	}

	get isPaused(): boolean {
		return this.paused
	}

	/** Answer the next matching request(s) with an error status instead of forwarding them. */
	respondWith(rule: ApiFaultRule): ApiFaultHandle {
		const active: ActiveRule = { rule, remaining: rule.count ?? 1, hits: 0, requests: [] }
		this.rules.push(active)
		return {
			get hits() {
				return active.hits
			},
			get requests() {
				return active.requests
			},
			clear: () => {
				active.remaining = 0
			},
		}
	}

	/** Removes every fault: rules cleared, pause lifted. */
	reset(): void {
		for (const rule of this.rules) rule.remaining = 0
		this.rules.length = 0
		this.resume()
	}

	async close(): Promise<void> {
		this.paused = false
		this.heldRequests.length = 0
		for (const socket of this.sockets) socket.destroy()
		await new Promise<void>((resolve) => this.listener.close(() => resolve()))
	}
}
