/**
 * The HTTP server keeping its clients apart, through the official SDK client over real HTTP and
 * the real local tier: client B can neither list, exec in nor destroy client A's sandbox (a named
 * `ForeignSandboxError`) while A drives it; with `sandboxScope: 'shared'` B sees it (the option's
 * positive control); a session's sandboxes end with it. A catastrophically backtracking `grep`
 * leaves the server answering (a ping comes back first) and ends with its budget error. Eviction
 * never takes a live session, and request bodies are bounded together (503), each case with its
 * positive control. Orderings are asserted through events, never through time.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { localSandboxSource } from '../../src/mcp/local-sandbox-source.js'
import { type McpHttpOptions, type McpHttpServer, serveMcpHttp } from '../../src/mcp/mcp-http.js'
import { McpSandboxRegistry } from '../../src/mcp/sandbox-registry.js'
import { GrepWorkerPool } from '../../src/tools/grep-worker-pool.js'
import { bwrapSkipReason } from '../backends/local/bwrap-available.js'
import { freshStateDir } from '../backends/local/local-test-support.js'
import { call, callError, httpClient, sessionOf, TEST_TOKEN } from './mcp-cli-kit.js'

const skip = bwrapSkipReason()

let stateDir: string
let removeState: () => Promise<void>
const servers: Array<{ server: McpHttpServer; registry: McpSandboxRegistry }> = []
const clients: Client[] = []

async function serve(options: Partial<McpHttpOptions> = {}): Promise<string> {
	const registry = new McpSandboxRegistry(
		localSandboxSource({ backend: { tier: 'process', stateDir }, allowNetwork: false }),
	)
	const server = await serveMcpHttp(registry, {
		host: '127.0.0.1',
		port: 0,
		token: TEST_TOKEN,
		version: '0',
		...options,
	})
	servers.push({ server, registry })
	return server.url
}

async function connect(url: string, sessionId?: string): Promise<Client> {
	const client = await httpClient(url, TEST_TOKEN, sessionId)
	clients.push(client)
	return client
}

beforeAll(async () => {
	const state = await freshStateDir()
	stateDir = state.dir
	removeState = state.remove
})
afterEach(async () => {
	vi.restoreAllMocks()
	await Promise.allSettled(clients.splice(0).map((client) => client.close()))
	for (const { server, registry } of servers.splice(0)) {
		await server.close()
		await registry.close()
	}
})
afterAll(async () => {
	await removeState?.()
})

const INITIALIZE = JSON.stringify({
	jsonrpc: '2.0',
	id: 1,
	method: 'initialize',
	params: {
		protocolVersion: '2025-06-18',
		capabilities: {},
		clientInfo: { name: 't', version: '0' },
	},
})

function post(url: string, body: string, headers: Record<string, string> = {}): Promise<Response> {
	return fetch(url, {
		method: 'POST',
		headers: {
			authorization: `Bearer ${TEST_TOKEN}`,
			'content-type': 'application/json',
			accept: 'application/json, text/event-stream',
			...headers,
		},
		body,
	})
}

describe.skipIf(skip !== undefined)('per-client sandboxes over HTTP', () => {
	it("keeps B from listing, running in or destroying A's sandbox, by name, while A drives it", async () => {
		const url = await serve()
		const a = await connect(url)
		const b = await connect(url)
		const id = String((await call(a, 'sandbox_create', { name: 'mine' })).sandbox_id)
		expect((await call(b, 'sandbox_list', {})).sandboxes).toEqual([])
		const execError = await callError(b, 'exec', { sandbox_id: id, argv: ['true'] })
		expect(execError).toMatchObject({ name: 'ForeignSandboxError', reason: 'foreign-sandbox' })
		const destroyError = await callError(b, 'sandbox_destroy', { sandbox_id: id })
		expect(destroyError).toMatchObject({ name: 'ForeignSandboxError' })
		// B's own name is its own: the same name makes B a sandbox of its own.
		const other = await call(b, 'sandbox_create', { name: 'mine' })
		expect(other).toMatchObject({ existed: false })
		expect(other.sandbox_id).not.toBe(id)
		// Positive control: A lists it, runs in it and destroys it.
		const listed = (await call(a, 'sandbox_list', {})).sandboxes as Array<{ sandbox_id: string }>
		expect(listed.map((entry) => entry.sandbox_id)).toEqual([id])
		expect((await call(a, 'exec', { sandbox_id: id, argv: ['echo', 'a'] })).stdout).toBe('a\n')
		expect(await call(a, 'sandbox_destroy', { sandbox_id: id })).toMatchObject({ destroyed: true })
	})

	it('a client that resumes its session keeps its sandboxes; a session that ends takes them with it', async () => {
		const url = await serve()
		const a = await connect(url)
		const id = String((await call(a, 'sandbox_create', {})).sandbox_id)
		const session = sessionOf(a)
		await a.close()
		const resumed = await connect(url, session)
		expect((await call(resumed, 'exec', { sandbox_id: id, argv: ['true'] })).exit_code).toBe(0)
		const watcher = await connect(url)
		await (resumed.transport as { terminateSession?: () => Promise<void> }).terminateSession?.()
		expect(await callError(watcher, 'exec', { sandbox_id: id, argv: ['true'] })).toMatchObject({
			name: 'UnknownSandboxError',
		})
	})

	it("positive control: with sandboxScope 'shared' every client sees and drives every sandbox", async () => {
		const url = await serve({ sandboxScope: 'shared' })
		const a = await connect(url)
		const b = await connect(url)
		const id = String((await call(a, 'sandbox_create', {})).sandbox_id)
		const listed = (await call(b, 'sandbox_list', {})).sandboxes as Array<{ sandbox_id: string }>
		expect(listed.map((entry) => entry.sandbox_id)).toContain(id)
		expect((await call(b, 'exec', { sandbox_id: id, argv: ['echo', 'b'] })).stdout).toBe('b\n')
	})
})

describe.skipIf(skip !== undefined)('grep on a busy server', () => {
	it('answers a ping while a backtracking grep runs; the grep ends with its budget error', async () => {
		const url = await serve()
		const client = await connect(url)
		const id = String((await call(client, 'sandbox_create', {})).sandbox_id)
		await call(client, 'write_file', { sandbox_id: id, path: 'slow.txt', content: 'a'.repeat(40) })
		const events: string[] = []
		// This process hosts the server: its matching starting is an event the test can see.
		let matching: () => void = () => {}
		const started = new Promise<void>((resolve) => {
			matching = resolve
		})
		const run = GrepWorkerPool.prototype.run
		vi.spyOn(GrepWorkerPool.prototype, 'run').mockImplementation(function (
			this: GrepWorkerPool,
			...args
		) {
			matching()
			return run.apply(this, args)
		})
		const grep = callError(client, 'grep', {
			sandbox_id: id,
			pattern: '(a+)+b',
			regex: true,
		}).then((error) => {
			events.push('grep ended')
			return error
		})
		await started
		events.push('matching started')
		await client.ping()
		events.push('ping answered')
		const error = await grep
		expect(events).toEqual(['matching started', 'ping answered', 'grep ended'])
		expect(error).toMatchObject({ name: 'GrepPatternTimeoutError', reason: 'grep-pattern-timeout' })
	})
})

describe('sessions and bodies under load', () => {
	it('never evicts a session with a request in flight; an idle one makes room; all live is a 503', async () => {
		const url = await serve({ maxSessions: 2, sessionIdleMs: 0 })
		const session = (id: string) => ({ 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' })
		const initialize = async () => {
			const response = await post(url, INITIALIZE)
			await response.body?.cancel()
			return { status: response.status, id: String(response.headers.get('mcp-session-id')) }
		}
		// A session's standalone event stream, open: a request in flight for as long as it is.
		const openStream = (id: string) =>
			fetch(url, {
				headers: {
					authorization: `Bearer ${TEST_TOKEN}`,
					accept: 'text/event-stream',
					...session(id),
				},
			})
		const busy = await initialize()
		const busyStream = await openStream(busy.id)
		expect(busyStream.status).toBe(200)
		const idle = await initialize()
		// Past the cap, the idle session makes room; the busy one stays.
		const newcomer = await initialize()
		expect(newcomer.status).toBe(200)
		const list = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} })
		expect((await post(url, list, session(idle.id))).status).toBe(404)
		// Every session live now: a new client is refused, and nobody is pushed out.
		const newcomerStream = await openStream(newcomer.id)
		const refused = await post(url, INITIALIZE)
		expect(refused.status).toBe(503)
		expect(refused.headers.get('retry-after')).toBe('5')
		await refused.body?.cancel()
		const stillThere = await post(url, list, session(busy.id))
		expect(stillThere.status).toBe(200)
		await stillThere.body?.cancel()
		await busyStream.body?.cancel()
		await newcomerStream.body?.cancel()
	})

	it('refuses a body while others hold the in-flight budget (503), and serves it once they are done', async () => {
		let reached: () => void = () => {}
		const holding = new Promise<void>((resolve) => {
			reached = resolve
		})
		const url = await serve({
			maxRequestBytes: 1024 * 1024,
			maxBodyBytesInFlight: 1536 * 1024,
			onBodyBytesInFlight: (bytes) => {
				if (bytes >= 900 * 1024) reached()
			},
		})
		// A body that is 900 KiB in and never finishes: its bytes stay counted.
		const slow = new TransformStream<Uint8Array, Uint8Array>()
		const writer = slow.writable.getWriter()
		const slowRequest = fetch(url, {
			method: 'POST',
			headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
			body: slow.readable,
			duplex: 'half',
		} as RequestInit).catch(() => undefined)
		await writer.write(new Uint8Array(900 * 1024).fill(0x20))
		await holding
		const big = `${' '.repeat(900 * 1024)}${INITIALIZE}`
		const refused = await post(url, big)
		expect(refused.status).toBe(503)
		expect(await refused.text()).toMatch(/request bodies already/)
		// Positive control: once the slow body ends (as bad JSON) the same request is served.
		await writer.write(new TextEncoder().encode('}'))
		await writer.close()
		expect((await slowRequest)?.status).toBe(400)
		const served = await post(url, big)
		expect(served.status).toBe(200)
		await served.body?.cancel()
	})

	it('refuses one body past its own ceiling with 413', async () => {
		const url = await serve({ maxRequestBytes: 1024 })
		const response = await post(url, `${' '.repeat(2048)}${INITIALIZE}`)
		expect(response.status).toBe(413)
	})
})
