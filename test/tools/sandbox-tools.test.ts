/**
 * `@namzu/sandbox/tools` on a real local sandbox: every tool's schema is a valid JSON Schema
 * (Ajv, strict), the real calls made here satisfy it and succeed, calls it rejects are refused by
 * the tool too (the same argument named), and the example agent loop runs end to end.
 */
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { Ajv } from 'ajv'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	createLocalSandboxProvider,
	type LocalSandboxProvider,
	type Sandbox,
	SandboxArgumentError,
} from '../../src/index.js'
import {
	createSandboxTools,
	type SandboxToolset,
	ToolUnsupportedError,
	toFunctionDefinitions,
	UnknownToolError,
} from '../../src/tools/index.js'
import { bwrapSkipReason } from '../backends/local/bwrap-available.js'
import { freshStateDir } from '../backends/local/local-test-support.js'

const skip = bwrapSkipReason()

/** One real call per tool, in an order where each finds what the one before made. */
const CALLS: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
	['write_file', { path: 'pkg/a.txt', content: 'alpha\nbeta\n' }],
	['read_file', { path: 'pkg/a.txt', start_line: 2 }],
	['edit_file', { path: 'pkg/a.txt', old_string: 'beta', new_string: 'gamma' }],
	['list_files', { path: 'pkg' }],
	['mkdir', { path: 'pkg/sub' }],
	['stat', { path: 'pkg/a.txt' }],
	['list_directory', { path: 'pkg', limit: 10 }],
	['watch', { path: 'pkg', wait_ms: 0 }],
	['rename', { from: 'pkg/sub', to: 'pkg/moved' }],
	['remove', { path: 'pkg/moved', recursive: true }],
	['expose_port', { port: 8000 }],
	['glob', { pattern: '**/*.txt' }],
	['grep', { pattern: 'gamma' }],
	['exec', { command: 'cat pkg/a.txt', timeout_ms: 10_000, max_output_bytes: 1024 }],
	['exec_start', { argv: ['sh', '-c', 'echo started'], cwd: 'pkg', env: { A: '1' } }],
	['exec_read', { exec_id: 'exec-from-start', cursor: 0, max_bytes: 100, wait_ms: 2000 }],
	['exec_start', { command: 'cat', tty: true }],
	['exec_write_stdin', { exec_id: 'exec-from-start', data: 'typed\n' }],
	['exec_signal', { exec_id: 'exec-from-start', signal: 'SIGKILL' }],
]

const REJECTED: ReadonlyArray<readonly [string, Record<string, unknown>, string]> = [
	['exec', { command: 'true', timeout_ms: 0 }, 'timeout_ms'],
	['exec', { command: 'true', shell: true }, 'shell'],
	['read_file', {}, 'path'],
	['read_file', { path: 'a', start_line: 0 }, 'start_line'],
	['write_file', { path: 'a', content: 1 }, 'content'],
	['exec_read', { exec_id: 'not-an-exec' }, 'exec_id'],
	['exec_signal', { exec_id: 'exec-1', signal: 'SIGSTOP' }, 'signal'],
	['glob', { pattern: '' }, 'pattern'],
	['exec_start', { command: 'true', env: { A: 1 } }, 'env.A'],
]

describe.skipIf(skip !== undefined)('@namzu/sandbox/tools on the local tier', () => {
	let provider: LocalSandboxProvider
	let sandbox: Sandbox
	let toolset: SandboxToolset
	let removeState: () => Promise<void>
	const ajv = new Ajv({ strict: true, allErrors: true })

	beforeAll(async () => {
		const state = await freshStateDir()
		removeState = state.remove
		provider = createLocalSandboxProvider({ tier: 'process', stateDir: state.dir })
		sandbox = await provider.create()
		toolset = createSandboxTools(sandbox)
	}, 60_000)

	afterAll(async () => {
		await toolset?.close()
		await sandbox?.destroy()
		await provider?.close()
		await removeState?.()
	})

	it('offers each tool once, in the function-calling shape with a compiling JSON Schema', () => {
		const definitions = toFunctionDefinitions(toolset.tools)
		expect(definitions.map((d) => d.function.name)).toEqual(toolset.tools.map((t) => t.name))
		expect(new Set(definitions.map((d) => d.function.name)).size).toBe(definitions.length)
		for (const definition of definitions) {
			expect(definition.type).toBe('function')
			expect(definition.function.parameters.type).toBe('object')
			expect(() => ajv.compile(definition.function.parameters)).not.toThrow()
			// The schema is plain data: what a model API is sent survives JSON.
			expect(JSON.parse(JSON.stringify(definition.function.parameters))).toEqual(
				definition.function.parameters,
			)
		}
	})

	it('every real call satisfies its schema and succeeds', async () => {
		const schemas = new Map(toolset.tools.map((tool) => [tool.name, ajv.compile(tool.inputSchema)]))
		let execId = ''
		const called = new Set<string>()
		for (const [name, given] of CALLS) {
			const args = given.exec_id === 'exec-from-start' ? { ...given, exec_id: execId } : given
			const validate = schemas.get(name)
			expect(validate?.(args), `${name}: ${JSON.stringify(validate?.errors)}`).toBe(true)
			const result = await toolset.call(name, args)
			expect(typeof result.text).toBe('string')
			if (name === 'exec_start') execId = String(result.data.exec_id)
			called.add(name)
		}
		expect([...called].sort()).toEqual(toolset.tools.map((tool) => tool.name).sort())
		expect((await toolset.call('read_file', { path: 'pkg/a.txt' })).data.content).toBe(
			'alpha\ngamma\n',
		)
	})

	it.each(REJECTED)(
		'%s refuses %j by naming %s, as the schema does',
		async (name, args, parameter) => {
			const tool = toolset.tools.find((candidate) => candidate.name === name)
			expect(tool && ajv.compile(tool.inputSchema)(args)).toBe(false)
			const refusal = toolset.call(name, args)
			await expect(refusal).rejects.toBeInstanceOf(SandboxArgumentError)
			await expect(refusal).rejects.toMatchObject({ method: name, parameter })
		},
	)

	it('an unknown tool is named; a sandbox without sessions or walkFiles refuses those tools by name', async () => {
		await expect(toolset.call('rm_rf', {})).rejects.toBeInstanceOf(UnknownToolError)
		// The same sandbox seen through the portable contract's required members only.
		const portable: Sandbox = {
			id: sandbox.id,
			status: sandbox.status,
			rootDir: sandbox.rootDir,
			environment: sandbox.environment,
			exec: (...args) => sandbox.exec(...args),
			writeFile: (...args) => sandbox.writeFile(...args),
			readFile: (...args) => sandbox.readFile(...args),
			listFiles: (...args) => sandbox.listFiles(...args),
			destroy: async () => undefined,
			[Symbol.asyncDispose]: async () => undefined,
		}
		const narrow = createSandboxTools(portable)
		await expect(narrow.call('exec_start', { command: 'true' })).rejects.toBeInstanceOf(
			ToolUnsupportedError,
		)
		await expect(narrow.call('glob', { pattern: '*' })).rejects.toMatchObject({
			reason: 'tool-unsupported',
			requires: 'walkFiles',
		})
		// Reading whole files falls back to ranged reads without readFileStream.
		await narrow.call('write_file', { path: 'big.txt', content: 'x\n'.repeat(700_000) })
		expect(
			(await narrow.call('read_file', { path: 'big.txt', start_line: 699_999 })).data,
		).toMatchObject({
			content: 'x\nx\n',
			total_lines: 700_000,
		})
		await narrow.close()
	})

	it('examples/agent-loop.mjs runs a scripted model through the tools without a network', () => {
		const run = spawnSync(
			process.execPath,
			[join(import.meta.dirname, '..', '..', 'examples', 'agent-loop.mjs')],
			{
				encoding: 'utf8',
				timeout: 60_000,
			},
		)
		expect(run.status, run.stderr).toBe(0)
		expect(run.stdout).toContain('error EditMatchNotFoundError (edit-match-not-found)')
		expect(run.stdout).toMatch(
			/> exec \{"command":"node sum.js"\}\nexit code 0\n--- stdout ---\n5\n/,
		)
		expect(run.stdout).toContain('model: done after')
	})
})
