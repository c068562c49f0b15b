/**
 * The MCP tools over the library's file verbs, `watch` (polled with a cursor) and `expose_port`,
 * over both transports through the official SDK client against the real local tier: each does
 * what it says, its annotations match, paths come back relative to the workspace root.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bwrapSkipReason } from '../backends/local/bwrap-available.js'
import { freshStateDir } from '../backends/local/local-test-support.js'
import {
	call,
	callError,
	type HttpServerProcess,
	httpClient,
	startHttpServer,
	stdioClient,
} from './mcp-cli-kit.js'

const skip = bwrapSkipReason()
const LONG_MS = 120_000

describe.skipIf(skip !== undefined).each(['stdio', 'http'] as const)(
	'mcp path, watch and port tools over %s',
	(transport) => {
		let client: Client
		let server: HttpServerProcess | undefined
		let removeState: () => Promise<void>
		let id: string

		beforeAll(async () => {
			const state = await freshStateDir()
			removeState = state.remove
			if (transport === 'http') {
				server = await startHttpServer(state.dir)
				client = await httpClient(server.url)
			} else {
				client = await stdioClient(state.dir)
			}
			id = String((await call(client, 'sandbox_create', {})).sandbox_id)
		}, LONG_MS)

		afterAll(async () => {
			await client?.close()
			await server?.stop()
			await removeState?.()
		})

		it('annotations: stat and list_directory read, remove destroys idempotently, rename destroys', async () => {
			const { tools } = await client.listTools()
			const byName = new Map(tools.map((tool) => [tool.name, tool.annotations]))
			expect(byName.get('stat')).toMatchObject({ readOnlyHint: true, destructiveHint: false })
			expect(byName.get('list_directory')).toMatchObject({ readOnlyHint: true })
			expect(byName.get('watch')).toMatchObject({ readOnlyHint: true })
			expect(byName.get('mkdir')).toMatchObject({ readOnlyHint: false, idempotentHint: true })
			expect(byName.get('remove')).toMatchObject({ destructiveHint: true, idempotentHint: true })
			expect(byName.get('rename')).toMatchObject({ destructiveHint: true, idempotentHint: false })
			expect(byName.get('expose_port')).toMatchObject({ readOnlyHint: false, idempotentHint: true })
			for (const tool of tools) {
				for (const [name, schema] of Object.entries(tool.inputSchema.properties ?? {})) {
					expect(
						(schema as { description?: string }).description,
						`${tool.name}.${name}`,
					).toBeTruthy()
				}
			}
		})

		it(
			'mkdir, stat, list_directory (paged), rename and remove, with workspace-relative paths',
			async () => {
				expect(await call(client, 'mkdir', { sandbox_id: id, path: 'a/b' })).toEqual({
					path: 'a/b',
				})
				expect(await call(client, 'mkdir', { sandbox_id: id, path: 'a/b' })).toEqual({
					path: 'a/b',
				})
				await call(client, 'write_file', { sandbox_id: id, path: 'a/one.txt', content: 'hello' })
				await call(client, 'write_file', { sandbox_id: id, path: 'a/two.txt', content: 'x' })
				expect(await call(client, 'stat', { sandbox_id: id, path: 'a/one.txt' })).toMatchObject({
					path: 'a/one.txt',
					exists: true,
					type: 'file',
					size: 5,
				})
				expect(await call(client, 'stat', { sandbox_id: id, path: 'nope' })).toEqual({
					path: 'nope',
					exists: false,
				})
				const first = await call(client, 'list_directory', { sandbox_id: id, path: 'a', limit: 2 })
				expect(first.entries).toEqual([
					expect.objectContaining({ name: 'b', path: 'a/b', type: 'directory' }),
					expect.objectContaining({ name: 'one.txt', path: 'a/one.txt', type: 'file', size: 5 }),
				])
				const second = await call(client, 'list_directory', {
					sandbox_id: id,
					path: 'a',
					cursor: String(first.next_cursor),
				})
				expect(second.entries).toEqual([expect.objectContaining({ name: 'two.txt' })])
				expect(second.next_cursor).toBeUndefined()

				expect(
					await call(client, 'rename', { sandbox_id: id, from: 'a/two.txt', to: 'a/b/moved.txt' }),
				).toEqual({ from: 'a/two.txt', to: 'a/b/moved.txt' })
				expect(await call(client, 'stat', { sandbox_id: id, path: 'a/b/moved.txt' })).toMatchObject(
					{
						exists: true,
					},
				)
				expect(await callError(client, 'remove', { sandbox_id: id, path: 'a' })).toMatchObject({
					name: 'SandboxFileError',
				})
				expect(
					await call(client, 'remove', { sandbox_id: id, path: 'a', recursive: true }),
				).toEqual({
					path: 'a',
					removed: true,
				})
				expect(
					await call(client, 'remove', { sandbox_id: id, path: 'a', recursive: true }),
				).toEqual({
					path: 'a',
					removed: false,
				})
				// The sandbox's boundary holds for these verbs too.
				expect(
					await callError(client, 'remove', { sandbox_id: id, path: '/etc/hostname' }),
				).toMatchObject({
					name: 'SandboxPathEscapeError',
				})
			},
			LONG_MS,
		)

		it(
			'watch: a cursor answers the changes since it and the next cursor; nothing new answers none',
			async () => {
				await call(client, 'mkdir', { sandbox_id: id, path: 'w' })
				const started = await call(client, 'watch', { sandbox_id: id, path: 'w', wait_ms: 0 })
				expect(started.events).toEqual([])
				let cursor = String(started.cursor)
				// The guest's watch may still be starting: write until a change comes back.
				const seen: unknown[] = []
				for (let attempt = 0; attempt < 50 && seen.length === 0; attempt++) {
					await call(client, 'write_file', {
						sandbox_id: id,
						path: `w/f${attempt}.txt`,
						content: 'x',
					})
					const polled = await call(client, 'watch', { sandbox_id: id, cursor, wait_ms: 2000 })
					seen.push(...(polled.events as unknown[]))
					cursor = String(polled.cursor)
				}
				expect(seen[0]).toMatchObject({ path: expect.stringMatching(/^w\/f\d+\.txt$/) })
				const quiet = await call(client, 'watch', { sandbox_id: id, cursor, wait_ms: 200 })
				expect(quiet).toMatchObject({ events: [], cursor, lost: false })
				await call(client, 'write_file', { sandbox_id: id, path: 'w/late.txt', content: 'y' })
				const late = await call(client, 'watch', { sandbox_id: id, cursor, wait_ms: 10_000 })
				expect(late.events).toContainEqual(expect.objectContaining({ path: 'w/late.txt' }))
				expect(late.cursor).not.toBe(cursor)
				const unknown = await call(client, 'watch', {
					sandbox_id: id,
					path: 'w',
					cursor: '000000000000:5',
					wait_ms: 0,
				})
				expect(unknown.lost).toBe(true)
			},
			LONG_MS,
		)

		it(
			'expose_port: a URL and token that serve the sandbox server; the same port answers the same URL',
			async () => {
				await call(client, 'exec', {
					sandbox_id: id,
					command: 'echo served > index.html; nohup python3 -m http.server 8123 >server.log 2>&1 &',
				})
				const exposed = await call(client, 'expose_port', { sandbox_id: id, port: 8123 })
				expect(exposed.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
				expect(typeof exposed.token).toBe('string')
				let body = ''
				for (let attempt = 0; attempt < 100 && !body.includes('served'); attempt++) {
					const response = await fetch(String(exposed.preview_url)).catch(() => undefined)
					body = response?.ok ? await response.text() : ''
					if (!body) await new Promise((resolve) => setTimeout(resolve, 200))
				}
				expect(body).toContain('served')
				expect((await fetch(String(exposed.url))).status).toBe(401)
				const again = await call(client, 'expose_port', { sandbox_id: id, port: 8123 })
				expect(again.url).toBe(exposed.url)
				expect(await callError(client, 'expose_port', { sandbox_id: id, port: 0 })).toMatchObject({
					name: 'SandboxArgumentError',
				})
			},
			LONG_MS,
		)
	},
)
