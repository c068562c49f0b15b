/**
 * Every `AgentSandbox` method refuses a bad argument with `SandboxArgumentError` naming the method
 * and the parameter, before dialing: the sandbox runs over a recording peer that counts every
 * connection, and a refused call must leave the count at zero. A refused `writeFile` against the
 * real agent leaves no file and no temp file behind.
 */
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SandboxArgumentError } from '../../../src/contract/errors.js'
import type { OpenTerminalOptions } from '../../../src/contract/sandbox.js'
import { type AgentSandbox, createAgentSandbox } from '../../../src/host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { type FakeAgent, healthzReply, reply, startFakeAgent } from '../fake-agent-server.js'

let fake: FakeAgent
let sandbox: AgentSandbox

beforeAll(async () => {
	fake = await startFakeAgent((request, socket) => {
		if (request.op === 'healthz') return reply(socket, healthzReply(['sessions']))
		reply(socket, { ok: false, error: 'not_scripted' })
	})
	sandbox = createAgentSandbox({
		id: 'arguments',
		transport: new AgentTransport({ kind: 'unix', path: fake.path ?? '' }),
		rootDir: '/workspace',
		environment: 'linux-namespace',
		release: async () => {},
	})
})

afterAll(async () => {
	await sandbox?.destroy()
	await fake?.close()
})

/** Whatever the call throws or rejects with (synchronously or not). */
async function refusalOf(call: () => unknown): Promise<unknown> {
	try {
		const result = call()
		if (result && typeof (result as PromiseLike<unknown>).then === 'function') await result
		else if (result && Symbol.asyncIterator in Object(result)) {
			for await (const _ of result as AsyncIterable<unknown>) break
		}
	} catch (error) {
		return error
	}
	return undefined
}

// Deliberately wrong types: the point is what a JavaScript caller (or a model's tool call) passes.
const bad = <T>(value: unknown): T => value as T
const longPath = 'a/'.repeat(51_200)
const size = { cols: 80, rows: 24 }

const cases: Array<[string, () => unknown, string, string, string]> = [
	['a non-string command', () => sandbox.exec(bad(42)), 'exec', 'command', '42'],
	['an empty command', () => sandbox.exec(''), 'exec', 'command', '""'],
	['non-array args', () => sandbox.exec('ls', bad('-la')), 'exec', 'args', '"-la"'],
	['a non-string arg', () => sandbox.exec('ls', bad(['-l', 7])), 'exec', 'args[1]', '7'],
	['null options', () => sandbox.exec('ls', [], bad(null)), 'exec', 'options', 'null'],
	[
		'a NaN timeout',
		() => sandbox.exec('ls', [], { timeout: Number.NaN }),
		'exec',
		'options.timeout',
		'NaN',
	],
	[
		'an Infinity timeout',
		() => sandbox.exec('ls', [], { timeout: Number.POSITIVE_INFINITY }),
		'exec',
		'options.timeout',
		'Infinity',
	],
	[
		'a negative timeout',
		() => sandbox.exec('ls', [], { timeout: -1 }),
		'exec',
		'options.timeout',
		'-1',
	],
	[
		'a null timeout',
		() => sandbox.exec('ls', [], { timeout: bad(null) }),
		'exec',
		'options.timeout',
		'null',
	],
	[
		'a cwd that is not a string',
		() => sandbox.exec('ls', [], { cwd: bad(7) }),
		'exec',
		'options.cwd',
		'7',
	],
	[
		'a non-AbortSignal signal',
		() => sandbox.exec('ls', [], { signal: bad('stop') }),
		'exec',
		'options.signal',
		'"stop"',
	],
	[
		'an AbortController instead of its signal',
		() => sandbox.exec('ls', [], { signal: bad(new AbortController()) }),
		'exec',
		'options.signal',
		'an AbortController',
	],
	[
		'an onOutput that is not a function',
		() => sandbox.exec('ls', [], { onOutput: bad('log') }),
		'exec',
		'options.onOutput',
		'"log"',
	],
	[
		'a zero maxOutputBytes',
		() => sandbox.exec('ls', [], { maxOutputBytes: 0 }),
		'exec',
		'options.maxOutputBytes',
		'0',
	],
	[
		'an executionId that is not exec_<uuid>',
		() => sandbox.exec('ls', [], { executionId: 'job-1' }),
		'exec',
		'options.executionId',
		'"job-1"',
	],
	[
		'an over-long cwd',
		() => sandbox.exec('ls', [], { cwd: longPath }),
		'exec',
		'options.cwd',
		'102400 bytes',
	],
	[
		'a non-Buffer, non-string content',
		() => sandbox.writeFile('a.txt', bad(42)),
		'writeFile',
		'content',
		'a number',
	],
	['a non-string path', () => sandbox.writeFile(bad(null), 'x'), 'writeFile', 'path', 'null'],
	['an empty path', () => sandbox.readFile(''), 'readFile', 'path', '""'],
	[
		'a path with a NUL',
		() => sandbox.readFile('a\0b'),
		'readFile',
		'path',
		'a string containing a NUL byte',
	],
	['a 100 KB path', () => sandbox.readFile(longPath), 'readFile', 'path', '102400 bytes'],
	[
		'a 256-byte component',
		() => sandbox.writeFile(`dir/${'c'.repeat(256)}`, 'x'),
		'writeFile',
		'path',
		'a component of 256 bytes',
	],
	[
		'a relative path that grows over the limit once resolved',
		() => sandbox.readFile('b/'.repeat(2045)),
		'readFile',
		'path',
		'4100 bytes',
	],
	[
		'a negative offset',
		() => sandbox.readFile('a', { offset: -1 }),
		'readFile',
		'options.offset',
		'-1',
	],
	[
		'a NaN length',
		() => sandbox.readFile('a', { length: Number.NaN }),
		'readFile',
		'options.length',
		'NaN',
	],
	[
		'a stream offset of null',
		() => sandbox.readFileStream('a', { offset: bad(null) }),
		'readFileStream',
		'options.offset',
		'null',
	],
	['a non-string list root', () => sandbox.listFiles(bad(1)), 'listFiles', 'rootPath', '1'],
	[
		'walkFiles without options',
		() => sandbox.walkFiles('.', bad(undefined)),
		'walkFiles',
		'options',
		'undefined',
	],
	[
		'openTerminal without options',
		() => sandbox.openTerminal(bad(undefined)),
		'openTerminal',
		'options',
		'undefined',
	],
	[
		'openTerminal without a size',
		() => sandbox.openTerminal(bad({})),
		'openTerminal',
		'options.size',
		'undefined',
	],
	[
		'a zero-column terminal',
		() => sandbox.openTerminal({ size: { cols: 0, rows: 24 } }),
		'openTerminal',
		'options.size.cols',
		'0',
	],
	[
		'a NaN-row terminal',
		() => sandbox.openTerminal({ size: { cols: 80, rows: Number.NaN } }),
		'openTerminal',
		'options.size.rows',
		'NaN',
	],
	[
		'a terminal cwd that is not a string',
		() => sandbox.openTerminal(bad<OpenTerminalOptions>({ size, cwd: 3 })),
		'openTerminal',
		'options.cwd',
		'3',
	],
	[
		'a NaN port',
		() => sandbox.openTcpConnection({ port: Number.NaN }),
		'openTcpConnection',
		'options.port',
		'NaN',
	],
	[
		'a port of 70000',
		() => sandbox.openTcpConnection({ port: 70_000 }),
		'openTcpConnection',
		'options.port',
		'70000',
	],
	[
		'startDetached without a command',
		() => sandbox.startDetached(bad({ sessionId: 'job' })),
		'startDetached',
		'options.command',
		'undefined',
	],
	['a non-string session id', () => sandbox.readSession(bad(5)), 'readSession', 'sessionId', '5'],
	[
		'a readSession maxBytes of 0',
		() => sandbox.readSession('job', { maxBytes: 0 }),
		'readSession',
		'options.maxBytes',
		'0',
	],
	[
		'a negative fromOffset',
		() => sandbox.attachTerminal('job', { fromOffset: -3 }),
		'attachTerminal',
		'options.fromOffset',
		'-3',
	],
	[
		'a non-AbortSignal abortSignal',
		() => sandbox.killSession('job', { abortSignal: bad({}) }),
		'killSession',
		'options.abortSignal',
		'an object',
	],
	[
		'an attachExecution maxOutputBytes of NaN',
		() => sandbox.attachExecution('exec_x', { maxOutputBytes: Number.NaN }),
		'attachExecution',
		'options.maxOutputBytes',
		'NaN',
	],
	[
		'a non-string execution id',
		() => sandbox.cancelExecution(bad(undefined)),
		'cancelExecution',
		'executionId',
		'undefined',
	],
	[
		'a negative quiesce grace',
		() => sandbox.quiesce({ graceMs: -1 }),
		'quiesce',
		'options.graceMs',
		'-1',
	],
	[
		'a flush timeout of Infinity',
		() => sandbox.flush({ timeoutMs: Number.POSITIVE_INFINITY }),
		'flush',
		'options.timeoutMs',
		'Infinity',
	],
]

describe('AgentSandbox refuses bad arguments by name, before dialing', () => {
	it.each(cases)('%s', async (_title, call, method, parameter, received) => {
		const before = fake.connections
		const error = await refusalOf(call)
		expect(error).toBeInstanceOf(SandboxArgumentError)
		expect(error).toMatchObject({
			name: 'SandboxArgumentError',
			reason: 'invalid-argument',
			retryable: false,
			method,
			parameter,
			received,
		})
		expect((error as Error).message).toMatch(
			new RegExp(`^${method}: ${parameter.replace(/[.[\]]/g, '\\$&')} must be `),
		)
		expect(fake.connections).toBe(before)
		expect(sandbox.status).toBe('ready')
	})

	it('names the parameter and what it got in one sentence', async () => {
		const error = await refusalOf(() => sandbox.exec('ls', [], { timeout: Number.NaN }))
		expect((error as Error).message).toBe(
			'exec: options.timeout must be an integer number of milliseconds in 1..2147483647, got NaN',
		)
	})

	it('never echoes an environment value or file content', async () => {
		const env = await refusalOf(() => sandbox.exec('ls', [], { env: bad({ TOKEN: 31_415_926 }) }))
		expect(env).toMatchObject({ parameter: 'options.env.TOKEN', received: 'a number' })
		expect((env as Error).message).not.toContain('31415926')
		const content = await refusalOf(() => sandbox.writeFile('a.txt', bad({ apiKey: 'sk-secret' })))
		expect((content as Error).message).not.toContain('sk-secret')
	})

	it('refuses synchronously where the member returns an iterable', () => {
		expect(() => sandbox.readFileStream(longPath)).toThrow(SandboxArgumentError)
		expect(() => sandbox.walkFiles('.', bad(null))).toThrow(SandboxArgumentError)
	})

	it('rejects a bad destroy() option without tearing anything down', async () => {
		const error = await refusalOf(() => sandbox.destroy(bad({ signal: 'now' })))
		expect(error).toMatchObject({ method: 'destroy', parameter: 'options.signal' })
		expect(sandbox.status).toBe('ready')
	})

	it('positive control: a good call does reach the peer', async () => {
		const before = fake.connections
		await expect(sandbox.listSessions()).rejects.not.toBeInstanceOf(SandboxArgumentError)
		expect(fake.connections).toBeGreaterThan(before)
	})
})

describe('a refused writeFile against the real agent', () => {
	let agent: StartedAgent
	let real: AgentSandbox

	beforeAll(async () => {
		agent = await startAgent()
		real = createAgentSandbox({
			id: 'arguments-real',
			transport: new AgentTransport({ kind: 'unix', path: agent.socketPath ?? '' }),
			rootDir: agent.workspace,
			environment: 'linux-namespace',
			release: async () => {},
		})
	})
	afterAll(async () => {
		await real?.destroy()
		await agent?.stop()
	})

	it('leaves no file and no temp file behind', async () => {
		await expect(real.writeFile('kept/x.txt', bad(42))).rejects.toBeInstanceOf(SandboxArgumentError)
		await expect(real.writeFile(`kept/${'c'.repeat(300)}`, 'x')).rejects.toBeInstanceOf(
			SandboxArgumentError,
		)
		expect(readdirSync(agent.workspace)).toEqual([])
		// Positive control: the same sandbox writes a good file.
		await real.writeFile('kept/x.txt', 'ok')
		expect(readdirSync(join(agent.workspace, 'kept'))).toEqual(['x.txt'])
	})
})
