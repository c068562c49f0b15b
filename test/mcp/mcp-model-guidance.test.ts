/**
 * What a model needs from `namzu-sandbox mcp` so it does not guess, over both transports through
 * the official SDK client on the real local tier: every parameter described; `sandbox_create`
 * stating the network (and that statement being true: no DNS under deny-all, loopback working),
 * limits, workspace root and how to start a server; a background server started through `exec`
 * returning and then answering; paths in results relative to the workspace root; progress that
 * says lines, elapsed time and the last line; the verbs annotated idempotent being so.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_MAX_PROCESSES } from '../../src/local-entry.js'
import { bwrapSkipReason } from '../backends/local/bwrap-available.js'
import { freshStateDir } from '../backends/local/local-test-support.js'
import { undescribedProperties } from '../tools/schema-walk.js'
import {
	call,
	callError,
	type HttpServerProcess,
	httpClient,
	startHttpServer,
	stdioClient,
} from './mcp-cli-kit.js'

const skip = bwrapSkipReason()

describe.skipIf(skip !== undefined).each(['stdio', 'http'] as const)(
	'mcp over %s, for a model',
	(transport) => {
		let client: Client
		let server: HttpServerProcess | undefined
		let removeState: () => Promise<void>
		let id: string
		let created: Record<string, unknown>
		let createdText: string

		beforeAll(async () => {
			const state = await freshStateDir()
			removeState = state.remove
			if (transport === 'http') {
				server = await startHttpServer(state.dir)
				client = await httpClient(server.url)
			} else {
				client = await stdioClient(state.dir)
			}
			const result = await client.callTool({ name: 'sandbox_create', arguments: { name: 'guide' } })
			created = (result.structuredContent ?? {}) as Record<string, unknown>
			const [first] = result.content as Array<{ type: string; text?: string }>
			createdText = first?.text ?? ''
			id = String(created.sandbox_id)
		}, 60_000)

		afterAll(async () => {
			await client?.close()
			await server?.stop()
			await removeState?.()
		})

		it('describes every parameter of every tool it lists', async () => {
			const { tools } = await client.listTools()
			expect(tools.length).toBeGreaterThan(10)
			expect(undescribedProperties(tools)).toEqual([])
		})

		it('sandbox_create states the network, limits, workspace root, lifetime and how to start a server', () => {
			expect(createdText).toContain('Network: deny-all')
			expect(createdText).toMatch(/DNS lookups fail/)
			expect(createdText).toMatch(/pip install/)
			expect(createdText).toMatch(/Limits: memory \d+ MiB/)
			expect(createdText).toContain(`${DEFAULT_MAX_PROCESSES} processes`)
			expect(createdText).toMatch(/exec stops a command after 120000 ms/)
			expect(createdText).toContain(`Workspace root: ${String(created.workspace_root)}`)
			expect(createdText).toContain('nohup python3 -m http.server 8000 >server.log 2>&1 &')
			expect(createdText).toContain('exec_start')
			expect(createdText).toMatch(/Lifetime: Destroyed when this MCP server stops/)
			expect(created).toMatchObject({
				tier: 'local',
				network: { policy: 'deny-all' },
				limits: {
					memory_mb: expect.any(Number),
					max_processes: DEFAULT_MAX_PROCESSES,
					exec_timeout_ms_default: 120_000,
				},
				workspace_root: expect.stringMatching(/^\//),
			})
		})

		it('what it says is so: commands start in the workspace root, and deny-all has no DNS', async () => {
			const pwd = await call(client, 'exec', { sandbox_id: id, command: 'pwd' })
			expect(String(pwd.stdout).trim()).toBe(String(created.workspace_root))
			const dns = await call(client, 'exec', {
				sandbox_id: id,
				argv: ['python3', '-c', 'import socket; socket.getaddrinfo("pypi.org", 443)'],
				timeout_ms: 60_000,
			})
			expect(dns.exit_code).not.toBe(0)
			expect(String(dns.stderr)).toMatch(/gaierror|Name or service|resolution/i)
		})

		it('a server started through exec in the background returns, keeps running and answers on loopback', async () => {
			const started = await call(client, 'exec', {
				sandbox_id: id,
				command: 'python3 -m http.server 8000 >/dev/null 2>&1 &',
				timeout_ms: 60_000,
			})
			expect(started).toMatchObject({ exit_code: 0, timed_out: false })
			await call(client, 'write_file', { sandbox_id: id, path: 'served.txt', content: 'hello\n' })
			const fetched = await call(client, 'exec', {
				sandbox_id: id,
				argv: [
					'python3',
					'-c',
					[
						'import time, urllib.request',
						'for _ in range(200):',
						'    try:',
						'        print(urllib.request.urlopen("http://127.0.0.1:8000/served.txt").read().decode(), end="")',
						'        break',
						'    except OSError:',
						'        time.sleep(0.1)',
					].join('\n'),
				],
				timeout_ms: 60_000,
			})
			expect(fetched).toMatchObject({ exit_code: 0, stdout: 'hello\n' })
		})

		it('paths in list_files, glob, grep and file results are relative to the workspace root', async () => {
			const root = String(created.workspace_root)
			await call(client, 'write_file', { sandbox_id: id, path: 'pkg/src/a.ts', content: 'x = 1\n' })
			const wrote = await call(client, 'write_file', {
				sandbox_id: id,
				path: `${root}/pkg/b.txt`,
				content: 'find me\n',
			})
			expect(wrote.path).toBe('pkg/b.txt')
			const results = [
				await client.callTool({ name: 'list_files', arguments: { sandbox_id: id, path: 'pkg' } }),
				await client.callTool({ name: 'list_files', arguments: { sandbox_id: id } }),
				await client.callTool({ name: 'glob', arguments: { sandbox_id: id, pattern: 'pkg/**' } }),
				await client.callTool({ name: 'grep', arguments: { sandbox_id: id, pattern: 'find me' } }),
				await client.callTool({
					name: 'read_file',
					arguments: { sandbox_id: id, path: `${root}/pkg/b.txt` },
				}),
			]
			for (const result of results) {
				expect(result.isError).toBeFalsy()
				expect(JSON.stringify(result)).not.toContain(root)
				expect(JSON.stringify(result)).not.toContain('/tmp/namzu-sbx-')
			}
			const [listed, all, glob, grep, read] = results.map(
				(result) => result.structuredContent as Record<string, unknown>,
			)
			const paths = (value: unknown) => (value as Array<{ path: string }>).map((f) => f.path).sort()
			expect(paths(listed?.files)).toEqual(['pkg/b.txt', 'pkg/src/a.ts'])
			expect(listed?.path).toBe('pkg')
			expect(all?.path).toBe('.')
			expect(paths(all?.files)).toEqual(expect.arrayContaining(['pkg/b.txt', 'pkg/src/a.ts']))
			expect(paths(glob?.files)).toEqual(['pkg/b.txt', 'pkg/src/a.ts'])
			expect(grep?.matches).toEqual([{ path: 'pkg/b.txt', line: 1, text: 'find me' }])
			expect(read?.path).toBe('pkg/b.txt')
			// Outside the workspace a path stays absolute: it names a real place.
			const outside = await call(client, 'glob', {
				sandbox_id: id,
				path: '/usr/lib',
				pattern: 'os-release',
			})
			expect(paths(outside.files)).toEqual(['/usr/lib/os-release'])
		})

		it('progress during a long exec says the elapsed time, the lines so far and the last line', async () => {
			const messages: string[] = []
			const result = await client.callTool(
				{
					name: 'exec',
					arguments: {
						sandbox_id: id,
						command: 'for i in $(seq 1 15); do echo "tick $i"; sleep 0.1; done',
					},
				},
				CallToolResultSchema,
				{ onprogress: (update) => messages.push(String(update.message)), timeout: 60_000 },
			)
			expect(result.isError).toBeFalsy()
			expect(messages.length).toBeGreaterThan(0)
			// On a slow machine a heartbeat may come before the first line; the rest name the last line.
			for (const message of messages) {
				expect(message).toMatch(
					/^running \d+\.\d s; \d+ lines? of output(; last: tick \d+|; no output yet)$/,
				)
			}
			expect(messages.some((message) => /last: tick \d+$/.test(message))).toBe(true)
		})

		it('sandbox_destroy a second time answers "already destroyed"; other tools say it was destroyed', async () => {
			const { tools } = await client.listTools()
			const annotated = new Map(tools.map((tool) => [tool.name, tool.annotations?.idempotentHint]))
			expect(annotated.get('sandbox_destroy')).toBe(true)
			const other = String((await call(client, 'sandbox_create', {})).sandbox_id)
			const first = await client.callTool({
				name: 'sandbox_destroy',
				arguments: { sandbox_id: other },
			})
			expect(first.structuredContent).toMatchObject({ destroyed: true, already_destroyed: false })
			const second = await client.callTool({
				name: 'sandbox_destroy',
				arguments: { sandbox_id: other },
			})
			expect(second.isError).toBeFalsy()
			expect(second.structuredContent).toMatchObject({ destroyed: true, already_destroyed: true })
			expect(JSON.stringify(second.content)).toContain('already destroyed')
			const after = await callError(client, 'exec', { sandbox_id: other, command: 'true' })
			expect(after).toMatchObject({ name: 'UnknownSandboxError', reason: 'unknown-sandbox' })
			expect(after.message).toContain('was destroyed')
			// An id never held is still refused, destroy included.
			expect(
				await callError(client, 'sandbox_destroy', { sandbox_id: 'never-made' }),
			).toMatchObject({
				name: 'UnknownSandboxError',
			})
		})

		it('every other tool annotated idempotent answers a repeat as the first call', async () => {
			const { tools } = await client.listTools()
			const idempotent = tools
				.filter((tool) => tool.annotations?.idempotentHint === true)
				.map((tool) => tool.name)
				.sort()
			// Each is repeated below (read-only ones trivially); a new one must be added here.
			expect(idempotent).toEqual(
				[
					'exec_read',
					'exec_signal',
					'expose_port',
					'glob',
					'grep',
					'list_directory',
					'list_files',
					'mkdir',
					'read_file',
					'remove',
					'sandbox_checkpoints',
					'sandbox_destroy',
					'sandbox_list',
					'stat',
					'watch',
					'write_file',
				].sort(),
			)
			expect(
				tools.find((tool) => tool.name === 'sandbox_create')?.annotations?.idempotentHint,
			).toBe(false)
			const write = { sandbox_id: id, path: 'same.txt', content: 'same\n' }
			expect(await call(client, 'write_file', write)).toEqual(
				await call(client, 'write_file', write),
			)
			const started = await call(client, 'exec_start', { sandbox_id: id, command: 'sleep 600' })
			const signal = { sandbox_id: id, exec_id: String(started.exec_id), signal: 'SIGKILL' }
			await call(client, 'exec_signal', signal)
			const again = await call(client, 'exec_signal', signal)
			expect(again).toMatchObject({ exec_id: started.exec_id, signal: 'SIGKILL' })
			const read = { sandbox_id: id, exec_id: String(started.exec_id), cursor: 0, wait_ms: 5000 }
			let first = await call(client, 'exec_read', read)
			for (let round = 0; round < 60 && first.status === 'running'; round++) {
				first = await call(client, 'exec_read', read)
			}
			expect(first.status).not.toBe('running')
			expect(await call(client, 'exec_read', read)).toEqual(first)
			for (const [tool, args] of [
				['read_file', { path: 'same.txt' }],
				['list_files', { path: 'pkg' }],
				['stat', { path: 'same.txt' }],
				['list_directory', { path: '.' }],
				['glob', { pattern: 'pkg/**' }],
				['grep', { pattern: 'find me' }],
				['sandbox_list', {}],
				['sandbox_checkpoints', {}],
			] as const) {
				const withoutId = tool === 'sandbox_list' || tool === 'sandbox_checkpoints'
				const withId = withoutId ? args : { sandbox_id: id, ...args }
				expect(await call(client, tool, withId)).toEqual(await call(client, tool, withId))
			}
		})
	},
)
