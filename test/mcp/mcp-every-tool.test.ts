/**
 * Every tool of `namzu-sandbox mcp`, over both transports, through the official SDK client,
 * against the real local tier.
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
	readToEnd,
	startHttpServer,
	stdioClient,
} from './mcp-cli-kit.js'

const skip = bwrapSkipReason()

const EXPECTED_TOOLS = [
	'sandbox_create',
	'sandbox_list',
	'sandbox_destroy',
	'sandbox_checkpoint',
	'sandbox_rollback',
	'sandbox_fork',
	'sandbox_checkpoints',
	'sandbox_checkpoint_delete',
	'exec',
	'exec_start',
	'exec_read',
	'exec_write_stdin',
	'exec_signal',
	'read_file',
	'write_file',
	'edit_file',
	'list_files',
	'stat',
	'list_directory',
	'mkdir',
	'remove',
	'rename',
	'glob',
	'grep',
	'watch',
	'expose_port',
]

describe.skipIf(skip !== undefined).each(['stdio', 'http'] as const)('mcp over %s', (transport) => {
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
		const created = await call(client, 'sandbox_create', { name: 'work' })
		id = String(created.sandbox_id)
	}, 60_000)

	afterAll(async () => {
		await client?.close()
		await server?.stop()
		await removeState?.()
	})

	it('lists every tool with annotations, and an explicit sandbox_id wherever one applies', async () => {
		const { tools } = await client.listTools()
		expect(tools.map((tool) => tool.name)).toEqual(EXPECTED_TOOLS)
		for (const tool of tools) {
			expect(typeof tool.annotations?.readOnlyHint).toBe('boolean')
			expect(typeof tool.annotations?.destructiveHint).toBe('boolean')
			expect(typeof tool.annotations?.idempotentHint).toBe('boolean')
			const needsId = ![
				'sandbox_create',
				'sandbox_list',
				'sandbox_fork',
				'sandbox_checkpoints',
				'sandbox_checkpoint_delete',
			].includes(tool.name)
			expect(tool.inputSchema.required?.includes('sandbox_id') ?? false).toBe(needsId)
		}
		const byName = new Map(tools.map((tool) => [tool.name, tool]))
		expect(byName.get('read_file')?.annotations?.readOnlyHint).toBe(true)
		expect(byName.get('sandbox_destroy')?.annotations?.destructiveHint).toBe(true)
		expect(byName.get('sandbox_create')?.annotations?.idempotentHint).toBe(false)
		expect(byName.get('sandbox_destroy')?.annotations?.idempotentHint).toBe(true)
	})

	it('sandbox_create is idempotent by name; sandbox_list shows it', async () => {
		const again = await call(client, 'sandbox_create', { name: 'work' })
		expect(again).toMatchObject({ sandbox_id: id, existed: true })
		const list = await call(client, 'sandbox_list', {})
		expect(list.sandboxes).toEqual([expect.objectContaining({ sandbox_id: id, name: 'work' })])
	})

	it('exec: exit code, both streams, a shell line or an argv', async () => {
		const shell = await call(client, 'exec', {
			sandbox_id: id,
			command: 'echo out; echo err >&2; exit 3',
		})
		expect(shell).toMatchObject({
			exit_code: 3,
			stdout: 'out\n',
			stderr: 'err\n',
			timed_out: false,
		})
		const argv = await call(client, 'exec', { sandbox_id: id, argv: ['printf', '%s', 'a b'] })
		expect(argv).toMatchObject({ exit_code: 0, stdout: 'a b' })
	})

	it('exec: output past max_output_bytes is cut in the middle with a marker', async () => {
		const result = await call(client, 'exec', {
			sandbox_id: id,
			command: 'printf "HEAD"; head -c 5000 /dev/zero | tr "\\0" x; printf "TAIL"',
			max_output_bytes: 256,
		})
		expect(result).toMatchObject({ stdout_truncated: true, stdout_bytes: 5008 })
		const stdout = String(result.stdout)
		expect(stdout.startsWith('HEAD')).toBe(true)
		expect(stdout.endsWith('TAIL')).toBe(true)
		expect(stdout).toContain('[… 4752 bytes truncated …]')
	})

	it('exec: timeout_ms ends the command and says so', async () => {
		const result = await call(client, 'exec', {
			sandbox_id: id,
			command: 'sleep 30',
			timeout_ms: 300,
		})
		expect(result).toMatchObject({ timed_out: true })
		expect(result.exit_code).not.toBe(0)
	})

	it('exec: arguments the schema refuses are a named SandboxArgumentError', async () => {
		expect(await callError(client, 'exec', { sandbox_id: id })).toMatchObject({
			name: 'SandboxArgumentError',
			reason: 'invalid-argument',
		})
		expect(
			await callError(client, 'exec', { sandbox_id: id, command: 'true', timeout_ms: -1 }),
		).toMatchObject({ name: 'SandboxArgumentError' })
	})

	it('a bad sandbox_id is UnknownSandboxError, for every kind of tool', async () => {
		for (const [tool, args] of [
			['exec', { command: 'true' }],
			['read_file', { path: 'x' }],
			['exec_read', { exec_id: 'exec-1' }],
			['sandbox_destroy', {}],
		] as const) {
			expect(
				await callError(client, tool, { sandbox_id: 'no-such-sandbox', ...args }),
			).toMatchObject({
				name: 'UnknownSandboxError',
				reason: 'unknown-sandbox',
			})
		}
	})

	it('write_file, read_file by lines and by bytes, list_files', async () => {
		await call(client, 'write_file', {
			sandbox_id: id,
			path: 'notes/a.txt',
			content: 'one\ntwo\nthree\n',
		})
		expect(
			await call(client, 'read_file', {
				sandbox_id: id,
				path: 'notes/a.txt',
				start_line: 2,
				end_line: 3,
			}),
		).toMatchObject({ content: 'two\nthree\n', start_line: 2, end_line: 3, total_lines: 3 })
		expect(
			await call(client, 'read_file', {
				sandbox_id: id,
				path: 'notes/a.txt',
				offset: 4,
				length: 3,
			}),
		).toMatchObject({ content: 'two', encoding: 'utf8', bytes: 3, more: true })
		await call(client, 'write_file', {
			sandbox_id: id,
			path: 'notes/bin',
			content: Buffer.from([0xff, 0x00, 0x01]).toString('base64'),
			encoding: 'base64',
		})
		expect(await call(client, 'read_file', { sandbox_id: id, path: 'notes/bin' })).toMatchObject({
			content: '/wAB',
			encoding: 'base64',
		})
		const listed = await call(client, 'list_files', { sandbox_id: id, path: 'notes' })
		expect(
			(listed.files as Array<{ path: string }>).map((file) => file.path.split('/').pop()).sort(),
		).toEqual(['a.txt', 'bin'])
	})

	it('edit_file: one exact match is replaced; a missing or ambiguous one is named and writes nothing', async () => {
		await call(client, 'write_file', {
			sandbox_id: id,
			path: 'e.txt',
			content: 'alpha beta beta\n',
		})
		expect(
			await call(client, 'edit_file', {
				sandbox_id: id,
				path: 'e.txt',
				old_string: 'alpha',
				new_string: 'ALPHA',
			}),
		).toMatchObject({ replacements: 1 })
		expect(
			await callError(client, 'edit_file', {
				sandbox_id: id,
				path: 'e.txt',
				old_string: 'gamma',
				new_string: 'x',
			}),
		).toMatchObject({ name: 'EditMatchNotFoundError', reason: 'edit-match-not-found' })
		const ambiguous = await callError(client, 'edit_file', {
			sandbox_id: id,
			path: 'e.txt',
			old_string: 'beta',
			new_string: 'x',
		})
		expect(ambiguous).toMatchObject({
			name: 'EditMatchAmbiguousError',
			reason: 'edit-match-ambiguous',
		})
		expect(ambiguous.message).toContain('2 times')
		expect(await call(client, 'read_file', { sandbox_id: id, path: 'e.txt' })).toMatchObject({
			content: 'ALPHA beta beta\n',
		})
		expect(
			await call(client, 'edit_file', {
				sandbox_id: id,
				path: 'e.txt',
				old_string: 'beta',
				new_string: 'B',
				replace_all: true,
			}),
		).toMatchObject({ replacements: 2 })
	})

	it('glob and grep over the walk', async () => {
		await call(client, 'write_file', {
			sandbox_id: id,
			path: 'src/a.ts',
			content: 'const x = 1\n// TODO fix\n',
		})
		await call(client, 'write_file', { sandbox_id: id, path: 'src/b.js', content: 'todo later\n' })
		const glob = await call(client, 'glob', { sandbox_id: id, pattern: 'src/*.ts' })
		expect(
			(glob.files as Array<{ path: string }>).map((file) => file.path.split('/').pop()),
		).toEqual(['a.ts'])
		const grep = await call(client, 'grep', {
			sandbox_id: id,
			pattern: 'todo',
			ignore_case: true,
			glob: 'src/**',
		})
		expect(
			(grep.matches as Array<{ path: string; line: number }>)
				.map((m) => `${m.path.split('/').pop()}:${m.line}`)
				.sort(),
		).toEqual(['a.ts:2', 'b.js:1'])
		const regex = await call(client, 'grep', {
			sandbox_id: id,
			pattern: '^const \\w+ =',
			regex: true,
		})
		expect(regex.matches).toEqual([expect.objectContaining({ line: 1, text: 'const x = 1' })])
	})

	it('exec_start → exec_read to the end, in small slices', async () => {
		const started = await call(client, 'exec_start', {
			sandbox_id: id,
			command: 'for i in 1 2 3 4 5; do echo "line $i"; sleep 0.05; done; exit 4',
		})
		const execId = String(started.exec_id)
		const { output, last } = await readToEnd(client, id, execId, 0, 5)
		expect(output).toBe('line 1\nline 2\nline 3\nline 4\nline 5\n')
		expect(last).toMatchObject({ status: 'exited', exit_code: 4 })
	})

	it('exec_write_stdin types into a tty command; without tty it is refused by name', async () => {
		const started = await call(client, 'exec_start', {
			sandbox_id: id,
			command: 'read line; echo "got:$line"',
			tty: true,
		})
		const execId = String(started.exec_id)
		await call(client, 'exec_write_stdin', { sandbox_id: id, exec_id: execId, data: 'hello\n' })
		const { output, last } = await readToEnd(client, id, execId)
		expect(output).toContain('got:hello')
		expect(last).toMatchObject({ status: 'exited', exit_code: 0 })

		const plain = await call(client, 'exec_start', { sandbox_id: id, command: 'sleep 5' })
		expect(
			await callError(client, 'exec_write_stdin', {
				sandbox_id: id,
				exec_id: String(plain.exec_id),
				data: 'x',
			}),
		).toMatchObject({ name: 'ExecStdinUnavailableError', reason: 'stdin-unavailable' })
		await call(client, 'exec_signal', {
			sandbox_id: id,
			exec_id: String(plain.exec_id),
			signal: 'SIGKILL',
		})
	})

	it('exec_signal ends a long command and its children', async () => {
		const started = await call(client, 'exec_start', {
			sandbox_id: id,
			command: 'sleep 1000 & sleep 1000; echo never',
		})
		const execId = String(started.exec_id)
		const signalled = await call(client, 'exec_signal', {
			sandbox_id: id,
			exec_id: execId,
			signal: 'SIGTERM',
		})
		expect(signalled).toMatchObject({ exec_id: execId, signal: 'SIGTERM' })
		const { output, last } = await readToEnd(client, id, execId)
		expect(output).not.toContain('never')
		expect(last.status).not.toBe('running')
		const left = await call(client, 'exec', {
			sandbox_id: id,
			command:
				'for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline 2>/dev/null; echo; done | grep -c "^sleep 1000" || true',
		})
		expect(String(left.stdout).trim()).toBe('0')
	})

	it('exec_start timeout_ms kills the command', async () => {
		const started = await call(client, 'exec_start', {
			sandbox_id: id,
			command: 'sleep 30',
			timeout_ms: 200,
		})
		const { last } = await readToEnd(client, id, String(started.exec_id))
		expect(last.status).toBe('killed')
	})

	it('sandbox_destroy ends the sandbox; its id is unknown afterwards', async () => {
		const other = await call(client, 'sandbox_create', {})
		const otherId = String(other.sandbox_id)
		expect(await call(client, 'sandbox_destroy', { sandbox_id: otherId })).toMatchObject({
			destroyed: true,
		})
		expect(await callError(client, 'exec', { sandbox_id: otherId, command: 'true' })).toMatchObject(
			{
				reason: 'unknown-sandbox',
			},
		)
	})
})
