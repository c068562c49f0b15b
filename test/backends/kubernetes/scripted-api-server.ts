// A real loopback HTTP server standing in for the Kubernetes API where the harness's real server
// cannot produce the fault (one verb never answered while the others are, a 410 on DELETE): the
// backend reaches it through its own API client (`createKubernetesClient` + `apiPortOf`) over the
// platform `fetch`, so status mapping, bounds and aborts are the real ones. Every request is
// logged as `METHOD path` on arrival; a script decides each answer.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

export interface ScriptedRequest {
	readonly method: string
	/** Path without the query. */
	readonly path: string
	readonly query: URLSearchParams
	/** The parsed JSON body, if any. */
	readonly body: unknown
}

/** An answer; `hang` accepts the request and never answers it. */
export type ScriptedAnswer =
	| { readonly status: number; readonly body?: unknown; readonly retryAfterSeconds?: number }
	| 'hang'

export interface ScriptedApiServer {
	/** `http://127.0.0.1:<port>`: hand it to the client as `access.server`. */
	readonly server: string
	/** `METHOD path` per request, in arrival order. */
	readonly requests: readonly string[]
	/** Requests answered `hang` whose connection the client has since closed. */
	readonly abandoned: readonly string[]
	close(): Promise<void>
}

/** The `Status` body the API server sends with an error code. */
export function statusBody(code: number, reason: string): object {
	return { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message: reason }
}

async function readBody(request: IncomingMessage): Promise<unknown> {
	const chunks: Buffer[] = []
	for await (const chunk of request) chunks.push(chunk as Buffer)
	const text = Buffer.concat(chunks).toString('utf8')
	return text === '' ? undefined : JSON.parse(text)
}

export async function startScriptedApiServer(
	script: (request: ScriptedRequest) => ScriptedAnswer,
): Promise<ScriptedApiServer> {
	const requests: string[] = []
	const abandoned: string[] = []
	const sockets = new Set<Socket>()
	const handle = async (incoming: IncomingMessage, outgoing: ServerResponse): Promise<void> => {
		const path = (incoming.url ?? '/').split('?')[0] ?? '/'
		const query = new URL(incoming.url ?? '/', 'http://scripted').searchParams
		const method = incoming.method ?? 'GET'
		const line = `${method} ${path}`
		requests.push(line)
		const answer = script({ method, path, query, body: await readBody(incoming) })
		if (answer === 'hang') {
			outgoing.on('close', () => abandoned.push(line))
			return
		}
		outgoing.writeHead(answer.status, {
			'content-type': 'application/json',
			...(answer.retryAfterSeconds === undefined
				? {}
				: { 'retry-after': String(answer.retryAfterSeconds) }),
		})
		outgoing.end(JSON.stringify(answer.body ?? {}))
	}
	const server: Server = createServer((incoming, outgoing) => {
		handle(incoming, outgoing).catch(() => outgoing.destroy())
	})
	server.on('connection', (socket: Socket) => {
		sockets.add(socket)
		socket.on('close', () => sockets.delete(socket))
	})
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
	const { port } = server.address() as AddressInfo
	return {
		server: `http://127.0.0.1:${port}`,
		requests,
		abandoned,
		close: () =>
			new Promise<void>((resolve) => {
				for (const socket of sockets) socket.destroy()
				server.close(() => resolve())
			}),
	}
}
