// The client's watch against real loopback servers (plain HTTP over fetch, and TLS over
// node:https): events as they arrive, a refused opening classified like any request, a cut
// connection and an oversized event named, and every way of leaving the loop closing the
// connection on the server's side.
import {
	createServer as createHttpServer,
	type IncomingMessage,
	type Server,
	type ServerResponse,
} from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo, Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	KubernetesApiError,
	KubernetesApiTimeoutError,
} from '../../../../src/backends/kubernetes/api/api-errors.js'
import { createKubernetesClient } from '../../../../src/backends/kubernetes/api/create-kubernetes-client.js'
import { KubernetesWatchFramingError } from '../../../../src/backends/kubernetes/api/watch-events.js'
import { makeTestTls, type TestTls } from './test-tls.js'

const TOKEN = 'watch-test-token'
let tls: TestTls
const servers: Server[] = []
const sockets = new Set<Socket>()

// Key generation: seconds on a loaded machine.
beforeAll(() => {
	tls = makeTestTls()
}, 120_000)

afterAll(async () => {
	for (const socket of sockets) socket.destroy()
	await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))))
	tls?.remove()
})

type Handler = (request: IncomingMessage, response: ServerResponse) => void

interface Served {
	readonly url: string
	readonly requests: string[]
	/** Resolves when the server has the watch request (its handler ran). */
	readonly opened: Promise<void>
	/** Resolves when the server sees the watch connection close. */
	readonly closed: Promise<void>
}

async function serve(handler: Handler, secure = false): Promise<Served> {
	const requests: string[] = []
	let markClosed: () => void = () => {}
	const closed = new Promise<void>((resolve) => {
		markClosed = resolve
	})
	let markOpened: () => void = () => {}
	const opened = new Promise<void>((resolve) => {
		markOpened = resolve
	})
	const wrapped: Handler = (request, response) => {
		requests.push(`${request.method} ${request.url} ${request.headers.authorization ?? ''}`)
		response.on('close', markClosed)
		handler(request, response)
		markOpened()
	}
	const server = secure
		? createHttpsServer({ cert: tls.serverCert, key: tls.serverKey }, wrapped)
		: createHttpServer(wrapped)
	server.on('connection', (socket) => {
		sockets.add(socket)
		socket.on('close', () => sockets.delete(socket))
	})
	servers.push(server)
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
	const { port } = server.address() as AddressInfo
	return { url: `${secure ? 'https' : 'http'}://127.0.0.1:${port}`, requests, opened, closed }
}

const line = (type: string, name: string, extra: object = {}) =>
	`${JSON.stringify({ type, object: { metadata: { name }, ...extra } })}\n`

/** Streams the lines with a pause between them, then leaves the response open. */
function streaming(lines: readonly string[]): Handler {
	return (_request, response) => {
		response.writeHead(200, { 'content-type': 'application/json' })
		let index = 0
		const next = (): void => {
			const text = lines[index++]
			if (text === undefined) return
			response.write(text)
			setTimeout(next, 10)
		}
		next()
	}
}

function client(url: string, secure = false, apiRequestTimeoutMs?: number) {
	return createKubernetesClient(
		{ server: url, getToken: () => TOKEN, ...(secure ? { ca: tls.caPem } : {}) },
		apiRequestTimeoutMs === undefined ? {} : { apiRequestTimeoutMs },
	)
}

async function rejectionOf(work: () => Promise<unknown>): Promise<unknown> {
	try {
		await work()
	} catch (error) {
		return error
	}
	throw new Error('expected a rejection')
}

describe.each([
	['fetch', false],
	['node:https', true],
])('watch over %s', (_transport, secure) => {
	it('yields events as they arrive, with the query a readiness watch needs, and breaking out closes the connection', async () => {
		const served = await serve(
			streaming([
				line('MODIFIED', 'c', { status: { n: 1 } }),
				line('MODIFIED', 'c', { status: { n: 2 } }),
			]),
			secure,
		)
		const seen: unknown[] = []
		for await (const event of client(served.url, secure).watch('/apis/g/v1/namespaces/n/things', {
			fieldSelector: 'metadata.name=c',
			resourceVersion: '42',
			timeoutSeconds: 9,
		})) {
			seen.push(event)
			if (seen.length === 2) break
		}
		expect(seen).toEqual([
			{ type: 'MODIFIED', object: { metadata: { name: 'c' }, status: { n: 1 } } },
			{ type: 'MODIFIED', object: { metadata: { name: 'c' }, status: { n: 2 } } },
		])
		await served.closed
		const [request] = served.requests
		const url = new URL(`http://x${request?.split(' ')[1]}`)
		expect(url.pathname).toBe('/apis/g/v1/namespaces/n/things')
		expect(Object.fromEntries(url.searchParams)).toEqual({
			watch: 'true',
			allowWatchBookmarks: 'false',
			fieldSelector: 'metadata.name=c',
			resourceVersion: '42',
			timeoutSeconds: '9',
		})
		expect(request).toContain(`Bearer ${TOKEN}`)
	})

	it('ends when the server ends the stream, with a final line that had no newline', async () => {
		const served = await serve((_request, response) => {
			response.writeHead(200)
			response.end(`${line('ADDED', 'a')}${line('DELETED', 'a').trimEnd()}`)
		}, secure)
		const types: string[] = []
		for await (const event of client(served.url, secure).watch('/w')) types.push(event.type)
		expect(types).toEqual(['ADDED', 'DELETED'])
	})

	it('a refused opening is the classified API error, naming the verb and path and never the token', async () => {
		const served = await serve((_request, response) => {
			response.writeHead(403, { 'content-type': 'application/json' })
			response.end(
				JSON.stringify({ kind: 'Status', code: 403, reason: 'Forbidden', message: 'cannot watch' }),
			)
		}, secure)
		const error = await rejectionOf(async () => {
			for await (const _ of client(served.url, secure).watch('/w')) {
			}
		})
		expect(error).toBeInstanceOf(KubernetesApiError)
		expect(error).toMatchObject({ reason: 'forbidden', verb: 'GET', path: '/w', status: 403 })
		expect(JSON.stringify(error) + String(error)).not.toContain(TOKEN)
	})

	it('an event longer than the bound is refused by name instead of growing the host', async () => {
		const served = await serve(streaming([line('ADDED', 'x'.repeat(1024 * 1024 + 16))]), secure)
		const error = await rejectionOf(async () => {
			for await (const _ of client(served.url, secure).watch('/w')) {
			}
		})
		expect(error).toBeInstanceOf(KubernetesWatchFramingError)
		expect(error).toMatchObject({ problem: 'line-too-long' })
		await served.closed
	})

	it('a connection cut mid-stream is a retryable connect failure', async () => {
		const served = await serve((_request, response) => {
			response.writeHead(200)
			response.write(line('ADDED', 'a'))
			setTimeout(() => response.socket?.destroy(), 20)
		}, secure)
		const types: string[] = []
		const error = await rejectionOf(async () => {
			for await (const event of client(served.url, secure).watch('/w')) types.push(event.type)
		})
		expect(types).toEqual(['ADDED'])
		expect(error).toBeInstanceOf(KubernetesApiError)
		expect(error).toMatchObject({ reason: 'connect-failed', retryable: true })
	})

	it("the caller's abort ends a quiet watch with the caller's reason and closes the connection", async () => {
		const served = await serve(streaming([]), secure)
		const controller = new AbortController()
		const reason = new Error('caller gave up')
		// Once the server holds the request (a fixed delay could fire before it is even sent, and
		// then the server never sees a connection to close).
		void served.opened.then(() => controller.abort(reason))
		const error = await rejectionOf(async () => {
			for await (const _ of client(served.url, secure).watch('/w', { signal: controller.signal })) {
			}
		})
		expect(error).toBe(reason)
		await served.closed
	})

	it('the request bound covers the opening only: a watch quiet for longer than it stays open', async () => {
		// The bound starts before the request is sent, the quiet once the server has it: the quiet
		// outlasts the bound whatever the load, and the bound leaves a loaded machine time to open.
		const boundMs = 5000
		const served = await serve((_request, response) => {
			response.writeHead(200)
			response.flushHeaders()
			setTimeout(() => response.end(line('ADDED', 'late')), boundMs + 300)
		}, secure)
		const names: unknown[] = []
		for await (const event of client(served.url, secure, boundMs).watch('/w')) {
			names.push((event.object as { metadata: { name: string } }).metadata.name)
		}
		expect(names).toEqual(['late'])
	})

	it('an opening that misses the request bound is KubernetesApiTimeoutError', async () => {
		const served = await serve(() => {}, secure)
		const error = await rejectionOf(async () => {
			for await (const _ of client(served.url, secure, 1000).watch('/w')) {
			}
		})
		expect(error).toBeInstanceOf(KubernetesApiTimeoutError)
		expect(error).toMatchObject({ verb: 'GET', path: '/w', timeoutMs: 1000 })
	})
})
