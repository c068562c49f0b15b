/**
 * Streamable HTTP for the MCP server: one endpoint (`/mcp`), every request refused with 401
 * unless it carries `Authorization: Bearer <token>`, a session per client (`mcp-session-id`), each
 * with its own SDK server over the shared registry — so a client that reconnects opens a new
 * session and finds the same sandboxes and long commands. Request bodies are bounded.
 */
import { randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js'
import { bearerMatches } from './http-access.js'
import { createMcpServer } from './mcp-server.js'
import type { McpSandboxRegistry } from './sandbox-registry.js'

/** The largest request body accepted (a `write_file` of 16 MiB, JSON-escaped, fits). */
export const MAX_MCP_REQUEST_BYTES = 64 * 1024 * 1024
export const MCP_HTTP_PATH = '/mcp'
/**
 * Sessions held at once; a new one past it closes the least recently used, so clients that vanish
 * without closing theirs never grow the server without bound.
 */
export const MAX_MCP_SESSIONS = 64

export interface McpHttpOptions {
	readonly host: string
	readonly port: number
	readonly token: string
	readonly version: string
}

export interface McpHttpServer {
	readonly url: string
	close(): Promise<void>
}

function answer(res: ServerResponse, status: number, message: string, headers = {}): void {
	res.writeHead(status, { 'content-type': 'application/json', ...headers })
	res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }))
}

async function readBody(req: IncomingMessage): Promise<unknown> {
	const parts: Buffer[] = []
	let total = 0
	for await (const chunk of req) {
		const buffer = chunk as Buffer
		total += buffer.length
		if (total > MAX_MCP_REQUEST_BYTES) throw new RangeError('request body too large')
		parts.push(buffer)
	}
	return total === 0 ? undefined : JSON.parse(Buffer.concat(parts).toString('utf8'))
}

export async function serveMcpHttp(
	registry: McpSandboxRegistry,
	options: McpHttpOptions,
): Promise<McpHttpServer> {
	const sessions = new Map<string, StreamableHTTPServerTransport>()

	const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
		if (!bearerMatches(req.headers.authorization, options.token)) {
			answer(res, 401, 'unauthorized: send Authorization: Bearer <token>', {
				'www-authenticate': 'Bearer',
			})
			return
		}
		if (new URL(req.url ?? '/', 'http://localhost').pathname !== MCP_HTTP_PATH) {
			answer(res, 404, `not found: the endpoint is ${MCP_HTTP_PATH}`)
			return
		}
		const sessionHeader = req.headers['mcp-session-id']
		const sessionId = typeof sessionHeader === 'string' ? sessionHeader : undefined
		let body: unknown
		if (req.method === 'POST') {
			try {
				body = await readBody(req)
			} catch {
				answer(res, 400, 'the request body is not JSON or is too large')
				return
			}
		}
		const known = sessionId === undefined ? undefined : sessions.get(sessionId)
		if (known && sessionId !== undefined) {
			// Map order is use order: the first entry is the least recently used.
			sessions.delete(sessionId)
			sessions.set(sessionId, known)
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
		const transport = new StreamableHTTPServerTransport({
			sessionIdGenerator: () => randomUUID(),
			onsessioninitialized: (id) => {
				sessions.set(id, transport)
				for (const [oldId, old] of sessions) {
					if (sessions.size <= MAX_MCP_SESSIONS) break
					sessions.delete(oldId)
					old.close().catch(() => undefined)
				}
			},
		})
		transport.onclose = () => {
			if (transport.sessionId !== undefined) sessions.delete(transport.sessionId)
		}
		await createMcpServer(registry, options.version).connect(transport)
		await transport.handleRequest(req, res, body)
	}

	const http: Server = createServer((req, res) => {
		handle(req, res).catch(() => {
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
			const open = [...sessions.values()]
			sessions.clear()
			await Promise.allSettled(open.map((transport) => transport.close()))
			http.closeAllConnections()
			await new Promise<void>((resolve) => http.close(() => resolve()))
		},
	}
}
