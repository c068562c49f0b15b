/**
 * Streamable HTTP for the MCP server: one endpoint (`/mcp`), every request refused with 401
 * unless it carries `Authorization: Bearer <token>`, a session per client (`mcp-session-id`), each
 * with its own SDK server. By default each client sees and drives only the sandboxes it created
 * (its view of the registry is keyed by its session id): a client that reconnects resumes its
 * session to keep them, and when a session ends its sandboxes are destroyed (kept-alive ones are
 * released). `sandboxScope: 'shared'` gives every client every sandbox. Request bodies are
 * bounded one by one and together (`mcp-request-body.ts`); eviction spares live sessions
 * (`mcp-http-sessions.ts`).
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js'
import { bearerMatches } from './http-access.js'
import { MAX_MCP_SESSIONS, MCP_SESSION_IDLE_MS, McpHttpSessions } from './mcp-http-sessions.js'
import {
	BodyBudget,
	BodyRefusal,
	MAX_MCP_BODY_BYTES_IN_FLIGHT,
	MAX_MCP_REQUEST_BYTES,
	readBoundedBody,
} from './mcp-request-body.js'
import { createMcpServer } from './mcp-server.js'
import type { McpSandboxRegistry } from './sandbox-registry.js'

export { MAX_MCP_SESSIONS, MCP_SESSION_IDLE_MS } from './mcp-http-sessions.js'
export { MAX_MCP_BODY_BYTES_IN_FLIGHT, MAX_MCP_REQUEST_BYTES } from './mcp-request-body.js'
export const MCP_HTTP_PATH = '/mcp'

/** Whether each client has its own sandboxes (`client`, the default) or all share them. */
export type McpSandboxScope = 'client' | 'shared'

export interface McpHttpOptions {
	readonly host: string
	readonly port: number
	readonly token: string
	readonly version: string
	/** Default `client`: a client sees and drives only the sandboxes it created. */
	readonly sandboxScope?: McpSandboxScope
	/** Default `MAX_MCP_SESSIONS`. */
	readonly maxSessions?: number
	/** Default `MCP_SESSION_IDLE_MS`: how long unused a session must be to be evicted. */
	readonly sessionIdleMs?: number
	/** Default `MAX_MCP_REQUEST_BYTES`. */
	readonly maxRequestBytes?: number
	/** Default `MAX_MCP_BODY_BYTES_IN_FLIGHT`. */
	readonly maxBodyBytesInFlight?: number
	/** Told the bytes of request bodies being read whenever it changes. Must not throw. */
	readonly onBodyBytesInFlight?: (heldBytes: number) => void
}

export interface McpHttpServer {
	readonly url: string
	close(): Promise<void>
}

function answer(res: ServerResponse, status: number, message: string, headers = {}): void {
	res.writeHead(status, { 'content-type': 'application/json', ...headers })
	res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }))
}

/** The body step answered a refusal; the request ends there. */
const REFUSED: unique symbol = Symbol('refused')

export async function serveMcpHttp(
	registry: McpSandboxRegistry,
	options: McpHttpOptions,
): Promise<McpHttpServer> {
	const endpoint = new McpHttpEndpoint(registry, options)
	const http: Server = createServer((req, res) => {
		endpoint.handle(req, res).catch(() => {
			if (!res.headersSent) answer(res, 500, 'internal error')
			else res.end()
		})
	})
	await new Promise<void>((resolve, reject) => {
		http.once('error', reject)
		http.listen(options.port, options.host, () => {
			http.off('error', reject)
			resolve()
		})
	})
	const address = http.address() as AddressInfo
	const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
	return {
		url: `http://${host}:${address.port}${MCP_HTTP_PATH}`,
		close: async () => {
			await endpoint.closeSessions()
			http.closeAllConnections()
			await new Promise<void>((resolve) => http.close(() => resolve()))
		},
	}
}

/** The endpoint's sessions and bounds, and the steps of one request. */
class McpHttpEndpoint {
	readonly #registry: McpSandboxRegistry
	readonly #options: McpHttpOptions
	readonly #sessions = new McpHttpSessions()
	readonly #scope: McpSandboxScope
	readonly #maxSessions: number
	readonly #idleMs: number
	readonly #maxRequestBytes: number
	readonly #bodies: BodyBudget

	constructor(registry: McpSandboxRegistry, options: McpHttpOptions) {
		this.#registry = registry
		this.#options = options
		this.#scope = options.sandboxScope ?? 'client'
		this.#maxSessions = options.maxSessions ?? MAX_MCP_SESSIONS
		this.#idleMs = options.sessionIdleMs ?? MCP_SESSION_IDLE_MS
		this.#maxRequestBytes = options.maxRequestBytes ?? MAX_MCP_REQUEST_BYTES
		this.#bodies = new BodyBudget(
			options.maxBodyBytesInFlight ?? MAX_MCP_BODY_BYTES_IN_FLIGHT,
			options.onBodyBytesInFlight,
		)
	}

	async closeSessions(): Promise<void> {
		await Promise.allSettled(this.#sessions.drain().map((transport) => transport.close()))
	}

	async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
		if (!bearerMatches(req.headers.authorization, this.#options.token)) {
			answer(res, 401, 'unauthorized: send Authorization: Bearer <token>', {
				'www-authenticate': 'Bearer',
			})
			return
		}
		if (new URL(req.url ?? '/', 'http://localhost').pathname !== MCP_HTTP_PATH) {
			answer(res, 404, `not found: the endpoint is ${MCP_HTTP_PATH}`)
			return
		}
		const sessions = this.#sessions
		const sessionHeader = req.headers['mcp-session-id']
		const sessionId = typeof sessionHeader === 'string' ? sessionHeader : undefined
		const known = sessionId === undefined ? undefined : sessions.get(sessionId)
		// In flight from here until its response closes (an event stream stays open as long).
		const end = sessionId !== undefined && known ? sessions.begin(sessionId) : () => {}
		res.once('close', end)
		const body = await this.#body(req, res)
		if (body === REFUSED) return
		if (known) {
			await known.handleRequest(req, res, body)
			return
		}
		if (sessionId !== undefined) {
			answer(res, 404, 'unknown session; initialize a new one')
			return
		}
		if (req.method !== 'POST' || !isInitializeRequest(body)) {
			answer(res, 400, 'no session: the first request must be initialize')
			return
		}
		await this.#open(req, res, body)
	}

	/** A POST's body, bounded; `REFUSED` once a refusal was answered. */
	async #body(req: IncomingMessage, res: ServerResponse): Promise<unknown> {
		if (req.method !== 'POST') return undefined
		try {
			return await readBoundedBody(req, this.#maxRequestBytes, this.#bodies)
		} catch (error) {
			if (!(error instanceof BodyRefusal)) throw error
			// The rest of the body is never read: the connection ends with the answer.
			answer(res, error.status, error.message, { connection: 'close' })
			return REFUSED
		}
	}

	/** A new client's session, or a 503 when every session is live. */
	async #open(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
		const sessions = this.#sessions
		if (sessions.size >= this.#maxSessions) {
			const victim = sessions.evictable(this.#idleMs)
			if (!victim) {
				answer(
					res,
					503,
					`${this.#maxSessions} sessions are in use; retry once a client closes one`,
					{ 'retry-after': '5' },
				)
				return
			}
			if (victim.sessionId !== undefined) sessions.delete(victim.sessionId)
			victim.close().catch(() => undefined)
		}
		const id = randomUUID()
		const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
			sessionIdGenerator: () => id,
			onsessioninitialized: () => {
				sessions.add(id, transport)
			},
		})
		transport.onclose = () => {
			sessions.delete(id)
			if (this.#scope === 'client') this.#registry.releaseClient(id).catch(() => undefined)
		}
		const view = this.#registry.forClient(this.#scope === 'client' ? id : undefined)
		await createMcpServer(view, this.#options.version).connect(transport)
		await transport.handleRequest(req, res, body)
	}
}
