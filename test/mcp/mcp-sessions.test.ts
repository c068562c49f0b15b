/**
 * What a client relies on across calls and connections: bearer auth on HTTP (401 without it, the
 * same request working with it), a long command read across a reconnect without losing or
 * repeating a byte, cancellation reaching the command, progress notifications, and what the
 * server destroys when it stops.
 */
import { readdir } from 'node:fs/promises'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { destroyLocalSandbox } from '../../src/local-entry.js'
import { MAX_MCP_SESSIONS } from '../../src/mcp/mcp-http.js'
import { bwrapSkipReason } from '../backends/local/bwrap-available.js'
import { freshStateDir } from '../backends/local/local-test-support.js'
import {
	call,
	type HttpServerProcess,
	httpClient,
	readToEnd,
	sessionOf,
	startHttpServer,
	stdioClient,
	TEST_TOKEN,
} from './mcp-cli-kit.js'

const skip = bwrapSkipReason()

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

function post(url: string, headers: Record<string, string>): Promise<Response> {
	return fetch(url, {
		method: 'POST',
		headers: {
			'content-type': 'application/json',
			accept: 'application/json, text/event-stream',
			...headers,
		},
		body: INITIALIZE,
	})
}

const SEQUENCE = 'for i in $(seq 1 40); do echo "n$i"; sleep 0.02; done'
const EXPECTED = Array.from({ length: 40 }, (_, i) => `n${i + 1}\n`).join('')

/** Reads until at least `bytes` arrived; the output and the cursor to go on from. */
async function readSome(client: Client, sandboxId: string, execId: string, bytes: number) {
	let output = ''
	let cursor = 0
	while (output.length < bytes) {
		const read = await call(client, 'exec_read', {
			sandbox_id: sandboxId,
			exec_id: execId,
			cursor,
			max_bytes: 7,
			wait_ms: 1000,
		})
		output += String(read.output)
		cursor = Number(read.cursor)
	}
	return { output, cursor }
}

async function commandsRunning(client: Client, sandboxId: string, needle: string): Promise<number> {
	const result = await call(client, 'exec', {
		sandbox_id: sandboxId,
		argv: [
			'sh',
			'-c',
			`for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline 2>/dev/null; echo; done | grep -c "^${needle}" || true`,
		],
	})
	return Number(String(result.stdout).trim())
}

describe.skipIf(skip !== undefined)('mcp --http', () => {
	let server: HttpServerProcess
	let stateDir: string
	let removeState: () => Promise<void>

	beforeAll(async () => {
		const state = await freshStateDir()
		stateDir = state.dir
		removeState = state.remove
		server = await startHttpServer(stateDir)
	}, 60_000)

	afterAll(async () => {
		await server?.stop()
		await removeState?.()
	})

	it('refuses a request without the bearer token (401), or with a wrong one; the right one is served', async () => {
		const none = await post(server.url, {})
		expect(none.status).toBe(401)
		expect(none.headers.get('www-authenticate')).toBe('Bearer')
		expect(
			(await post(server.url, { authorization: 'Bearer wrong-token-0123456789abc' })).status,
		).toBe(401)
		const served = await post(server.url, { authorization: `Bearer ${TEST_TOKEN}` })
		expect(served.status).toBe(200)
		expect(served.headers.get('mcp-session-id')).toMatch(/^[0-9a-f-]{36}$/)
		const client = await httpClient(server.url)
		expect((await client.listTools()).tools.length).toBeGreaterThan(0)
		await client.close()
	})

	it('holds at most MAX_MCP_SESSIONS sessions: past it, with every session recently used, a new client is refused and nobody is pushed out', async () => {
		const opened: string[] = []
		const open = async () => {
			const response = await post(server.url, { authorization: `Bearer ${TEST_TOKEN}` })
			await response.body?.cancel()
			return { status: response.status, id: String(response.headers.get('mcp-session-id')) }
		}
		const end = (session: string) =>
			fetch(server.url, {
				method: 'DELETE',
				headers: {
					authorization: `Bearer ${TEST_TOKEN}`,
					'mcp-session-id': session,
					'mcp-protocol-version': '2025-06-18',
				},
			})
		try {
			let refused: Response | undefined
			for (let i = 0; i <= MAX_MCP_SESSIONS && refused === undefined; i++) {
				const attempt = await open()
				if (attempt.status === 200) opened.push(attempt.id)
				else refused = await post(server.url, { authorization: `Bearer ${TEST_TOKEN}` })
			}
			expect(refused?.status).toBe(503)
			await refused?.body?.cancel()
			// The first session opened here is still served: eviction spared it (used moments ago).
			const list = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} })
			const still = await fetch(server.url, {
				method: 'POST',
				headers: {
					authorization: `Bearer ${TEST_TOKEN}`,
					'content-type': 'application/json',
					accept: 'application/json, text/event-stream',
					'mcp-session-id': String(opened[0]),
					'mcp-protocol-version': '2025-06-18',
				},
				body: list,
			})
			expect(still.status).toBe(200)
			await still.body?.cancel()
		} finally {
			for (const session of opened) await (await end(session)).body?.cancel()
		}
	})

	it('a long command read across a client reconnect loses and repeats nothing', async () => {
		const first = await httpClient(server.url)
		const sandboxId = String(
			(await call(first, 'sandbox_create', { name: 'reconnect' })).sandbox_id,
		)
		const execId = String(
			(await call(first, 'exec_start', { sandbox_id: sandboxId, command: SEQUENCE })).exec_id,
		)
		const before = await readSome(first, sandboxId, execId, 30)
		// The same client, reconnected: it resumes its session, and with it its sandboxes.
		const session = sessionOf(first)
		await first.close()
		const second = await httpClient(server.url, TEST_TOKEN, session)
		const after = await readToEnd(second, sandboxId, execId, before.cursor, 7)
		expect(before.output + after.output).toBe(EXPECTED)
		await second.close()
	})

	it('a client cancelling exec terminates the command in the sandbox', async () => {
		const client = await httpClient(server.url)
		const sandboxId = String((await call(client, 'sandbox_create', { name: 'cancel' })).sandbox_id)
		const controller = new AbortController()
		const running = client.callTool(
			{
				name: 'exec',
				arguments: { sandbox_id: sandboxId, command: 'touch started; exec sleep 777' },
			},
			CallToolResultSchema,
			{ signal: controller.signal, timeout: 60_000 },
		)
		running.catch(() => undefined)
		for (let i = 0; i < 200; i++) {
			const seen = await client.callTool({
				name: 'read_file',
				arguments: { sandbox_id: sandboxId, path: 'started' },
			})
			if (!seen.isError) break
			await new Promise((resolve) => setTimeout(resolve, 50))
		}
		expect(await commandsRunning(client, sandboxId, 'sleep 777')).toBe(1)
		controller.abort()
		await expect(running).rejects.toThrow()
		let left = 1
		for (let i = 0; i < 100 && left > 0; i++) {
			left = await commandsRunning(client, sandboxId, 'sleep 777')
			if (left > 0) await new Promise((resolve) => setTimeout(resolve, 50))
		}
		expect(left).toBe(0)
		await client.close()
	})

	it('sends progress notifications during a long exec when the client asks for them', async () => {
		const client = await httpClient(server.url)
		const sandboxId = String(
			(await call(client, 'sandbox_create', { name: 'progress' })).sandbox_id,
		)
		const progress: number[] = []
		const result = await client.callTool(
			{
				name: 'exec',
				arguments: {
					sandbox_id: sandboxId,
					command: 'for i in $(seq 1 15); do echo tick; sleep 0.1; done',
				},
			},
			CallToolResultSchema,
			{ onprogress: (update) => progress.push(update.progress), timeout: 60_000 },
		)
		expect(result.isError).toBeFalsy()
		expect(progress.length).toBeGreaterThan(0)
		expect([...progress].sort((a, b) => a - b)).toEqual(progress)
		await client.close()
	})
})

describe.skipIf(skip !== undefined)('mcp shutdown', () => {
	it('destroys the sandboxes it created when it stops, and leaves kept-alive ones running', async () => {
		const state = await freshStateDir()
		const server = await startHttpServer(state.dir)
		let kept: string | undefined
		try {
			const client = await httpClient(server.url)
			const gone = String((await call(client, 'sandbox_create', { name: 'gone' })).sandbox_id)
			kept = String(
				(await call(client, 'sandbox_create', { name: 'kept', keep_alive: true })).sandbox_id,
			)
			await client.close()
			const sandboxDirs = async () =>
				(await readdir(state.dir)).filter((entry) => entry.startsWith('namzu-sbx-')).sort()
			expect(await sandboxDirs()).toEqual([`namzu-sbx-${gone}`, `namzu-sbx-${kept}`].sort())
			await server.stop()
			expect(server.child.exitCode).toBe(0)
			expect(await sandboxDirs()).toEqual([`namzu-sbx-${kept}`])
		} finally {
			await server.stop()
			if (kept !== undefined) await destroyLocalSandbox(kept, { stateDir: state.dir })
			await state.remove()
		}
	}, 60_000)

	it('over stdio, a kept-alive sandbox and its long command survive the server; a new one resumes from the cursor', async () => {
		const state = await freshStateDir()
		let sandboxId: string | undefined
		try {
			const first = await stdioClient(state.dir)
			sandboxId = String((await call(first, 'sandbox_create', { keep_alive: true })).sandbox_id)
			const execId = String(
				(await call(first, 'exec_start', { sandbox_id: sandboxId, command: SEQUENCE })).exec_id,
			)
			const before = await readSome(first, sandboxId, execId, 30)
			await first.close()
			const second = await stdioClient(state.dir)
			const after = await readToEnd(second, sandboxId, execId, before.cursor, 7)
			expect(before.output + after.output).toBe(EXPECTED)
			await call(second, 'sandbox_destroy', { sandbox_id: sandboxId })
			sandboxId = undefined
			await second.close()
			expect((await readdir(state.dir)).filter((entry) => entry.startsWith('namzu-sbx-'))).toEqual(
				[],
			)
		} finally {
			if (sandboxId !== undefined) await destroyLocalSandbox(sandboxId, { stateDir: state.dir })
			await state.remove()
		}
	}, 60_000)
})
