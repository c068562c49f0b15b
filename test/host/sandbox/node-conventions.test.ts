/**
 * Node conventions of the sandbox over a real agent: the bytes it hands a caller are `Buffer`s (so
 * `String(chunk)` is the text, not `103,117,101,…`), and an options argument the contract marks
 * required is refused by name (`SandboxArgumentError`) instead of a `TypeError` from inside.
 */
import { writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SandboxArgumentError } from '../../../src/contract/errors.js'
import { type AgentSandbox, createAgentSandbox } from '../../../src/host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'

let agent: StartedAgent
let sandbox: AgentSandbox
let server: Server
let port: number

beforeAll(async () => {
	agent = await startAgent()
	sandbox = createAgentSandbox({
		id: 'conventions',
		transport: new AgentTransport({ kind: 'unix', path: agent.socketPath ?? '' }),
		rootDir: agent.workspace,
		environment: 'linux-namespace',
		release: async () => {},
	})
	server = createServer((socket) => socket.end('guest says hi'))
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
	const address = server.address()
	port = typeof address === 'object' && address ? address.port : 0
})

afterAll(async () => {
	await sandbox.destroy()
	await new Promise((resolve) => server.close(resolve))
	await agent.stop()
})

describe('chunks handed to callers are Buffers', () => {
	it('a tcp connection hands onData Buffers whose String() is the text', async () => {
		const connection = await sandbox.openTcpConnection({ port })
		const chunks: Uint8Array[] = []
		connection.onData((chunk) => chunks.push(chunk))
		const deadline = Date.now() + 5000
		while (chunks.map((chunk) => String(chunk)).join('') !== 'guest says hi') {
			if (Date.now() > deadline) break
			await sleep(10)
		}
		// The guest's listener half-closed; ending our half closes the connection.
		connection.end()
		await connection.closed
		expect(chunks.length).toBeGreaterThan(0)
		expect(chunks.every((chunk) => Buffer.isBuffer(chunk))).toBe(true)
		expect(chunks.map((chunk) => String(chunk)).join('')).toBe('guest says hi')
	})

	it('readFileStream yields Buffers and readFile answers one', async () => {
		await writeFile(join(agent.workspace, 'streamed.txt'), 'streamed bytes')
		const chunks: Buffer[] = []
		for await (const chunk of sandbox.readFileStream('streamed.txt')) chunks.push(chunk)
		expect(chunks.every((chunk) => Buffer.isBuffer(chunk))).toBe(true)
		expect(chunks.map(String).join('')).toBe('streamed bytes')
		expect(Buffer.isBuffer(await sandbox.readFile('streamed.txt'))).toBe(true)
	})
})

describe('a required options argument', () => {
	const refusal = (method: string, received: string) => ({
		name: 'SandboxArgumentError',
		reason: 'invalid-argument',
		method,
		parameter: 'options',
		expected: 'an object',
		received,
	})

	it('walkFiles(root) without options throws SandboxArgumentError naming options, before anything runs', () => {
		const walk = sandbox.walkFiles as (root: string, options?: unknown) => AsyncIterable<unknown>
		const error = (() => {
			try {
				walk.call(sandbox, agent.workspace)
			} catch (caught) {
				return caught
			}
			return undefined
		})()
		expect(error).toBeInstanceOf(SandboxArgumentError)
		expect(error).toMatchObject(refusal('walkFiles', 'undefined'))
		expect((error as Error).message).toBe('walkFiles: options must be an object, got undefined')
	})

	it.each([
		['openTerminal', undefined, 'undefined'],
		['openTerminal', null, 'null'],
		['openTcpConnection', undefined, 'undefined'],
		['openTcpConnection', 8080, '8080'],
		['startDetached', undefined, 'undefined'],
		['startDetached', ['a'], 'an array of length 1'],
	] as const)(
		'%s(%j) rejects with SandboxArgumentError naming options',
		async (method, options, received) => {
			const call = sandbox[method] as (options: unknown) => Promise<unknown>
			const error = await call.call(sandbox, options).catch((caught: unknown) => caught)
			expect(error).toBeInstanceOf(SandboxArgumentError)
			expect(error).toMatchObject(refusal(method, received))
		},
	)

	it('the sandbox still serves after the refusals', async () => {
		const result = await sandbox.exec('sh', ['-c', 'echo ok'])
		expect(result.stdout).toBe('ok\n')
	})
})
