/** Terminals, tcp connections, walkFiles, destroy and retirement of createAgentSandbox. */
import { writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { SandboxDestroyedError } from '../../../src/contract/errors.js'
import type { SandboxRetirementObservation } from '../../../src/contract/retirement.js'
import type { SandboxFileEntry, TerminalSession } from '../../../src/contract/sandbox.js'
import { RemoteCancellationUnknownError } from '../../../src/host/refusals/refusal-errors.js'
import { type AgentSandbox, createAgentSandbox } from '../../../src/host/sandbox/agent-sandbox.js'
import {
	SandboxRetiredError,
	SandboxTcpTargetRefusedError,
} from '../../../src/host/sandbox/agent-sandbox-errors.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { encodeFrame } from '../../../src/wire/frame.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { type FakeAgent, healthzReply, reply, startFakeAgent } from '../fake-agent-server.js'

let agent: StartedAgent
let releases: Array<AbortSignal | undefined>
let onRelease: () => void
let dials: number
let sandbox: AgentSandbox

beforeEach(async () => {
	agent = await startAgent()
	releases = []
	onRelease = () => {}
	dials = 0
	sandbox = createAgentSandbox({
		id: 'lifecycle',
		transport: new AgentTransport(
			{ kind: 'unix', path: agent.socketPath ?? '' },
			{ onDial: () => dials++ },
		),
		rootDir: agent.workspace,
		environment: 'linux-namespace',
		release: async (signal) => {
			onRelease()
			releases.push(signal)
		},
	})
})

afterEach(async () => {
	await sandbox.destroy()
	await agent.stop()
})

function collect(session: TerminalSession): { text: () => string } {
	let text = ''
	session.onData((chunk) => {
		text += chunk
	})
	return { text: () => text }
}

async function waitFor(predicate: () => boolean, timeoutMs = 5000): Promise<void> {
	const deadline = Date.now() + timeoutMs
	while (!predicate()) {
		if (Date.now() > deadline) throw new Error('condition not met in time')
		await new Promise((resolve) => setTimeout(resolve, 10))
	}
}

describe('openTerminal', () => {
	it('echoes input, applies a resize, and resolves exited with the exit code', async () => {
		const session = await sandbox.openTerminal({ command: '/bin/sh', size: { cols: 80, rows: 24 } })
		const output = collect(session)
		session.write('echo "sum=$((40+2))"\n')
		await waitFor(() => output.text().includes('sum=42'))
		session.resize({ cols: 100, rows: 40 })
		// The guest applies a resize asynchronously to typed input, so the shell polls for it.
		session.write(
			'until [ "$(stty size)" = "40 100" ]; do sleep 0.05; done; echo "size=$(stty size)"\n',
		)
		await waitFor(() => output.text().includes('size=40 100'))
		session.write('exit 3\n')
		await expect(session.exited).resolves.toMatchObject({ exitCode: 3 })
	})
})

describe('openTcpConnection', () => {
	let server: Server | undefined
	afterEach(async () => {
		const current = server
		server = undefined
		if (current) await new Promise((resolve) => current.close(resolve))
	})

	it('carries bytes both ways to a loopback listener', async () => {
		server = createServer((socket) => socket.pipe(socket))
		await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve))
		const address = server.address()
		const port = typeof address === 'object' && address ? address.port : 0
		const connection = await sandbox.openTcpConnection({ port })
		let received = ''
		connection.onData((chunk) => {
			received += Buffer.from(chunk).toString()
		})
		connection.write('ping-')
		connection.write(new Uint8Array(Buffer.from('pong')))
		await waitFor(() => received === 'ping-pong')
		connection.end()
		await connection.closed
	})

	it('refuses a non-loopback host on the host, before dialing', async () => {
		const before = dials
		const error = await sandbox
			.openTcpConnection({ port: 80, host: '10.0.0.1' as '127.0.0.1' })
			.catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(SandboxTcpTargetRefusedError)
		expect(dials).toBe(before)
	})
})

describe('listFiles and walkFiles', () => {
	it('lists files with workspace-relative paths and answers [] for a missing root', async () => {
		await writeFile(join(agent.workspace, 'a.txt'), 'abc')
		await expect(sandbox.listFiles('.')).resolves.toEqual([{ path: 'a.txt', size: 3 }])
		await expect(sandbox.listFiles(agent.workspace)).resolves.toEqual([{ path: 'a.txt', size: 3 }])
		await expect(sandbox.listFiles('no-such-dir')).resolves.toEqual([])
	})

	it('walks files through exec, showing workspace-relative paths', async () => {
		await writeFile(join(agent.workspace, 'x.ts'), 'x')
		await writeFile(join(agent.workspace, 'y.md'), 'yy')
		const found: SandboxFileEntry[] = []
		for await (const entry of sandbox.walkFiles(agent.workspace, {
			pattern: '*.ts',
			maxEntries: 10,
		})) {
			found.push(entry)
		}
		expect(found).toEqual([{ path: 'x.ts', size: 1 }])
	})
})

describe('destroy', () => {
	it('shares one teardown between concurrent calls and stays idempotent', async () => {
		const first = sandbox.destroy()
		const second = sandbox.destroy()
		expect(second).toBe(first)
		await Promise.all([first, second])
		await sandbox.destroy()
		expect(releases).toHaveLength(1)
		expect(sandbox.status).toBe('destroyed')
	})

	it('kills and awaits every terminal and tcp connection before releasing', async () => {
		const server = createServer((socket) => socket.pipe(socket))
		await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
		const address = server.address()
		const port = typeof address === 'object' && address ? address.port : 0
		try {
			const terminal = await sandbox.openTerminal({
				command: '/bin/sh',
				args: ['-c', 'trap "" TERM HUP; while :; do sleep 1; done'],
				size: { cols: 80, rows: 24 },
			})
			const connection = await sandbox.openTcpConnection({ port })
			let terminalDone = false
			let connectionDone = false
			void terminal.exited.then(() => {
				terminalDone = true
			})
			void connection.closed.then(() => {
				connectionDone = true
			})
			let doneAtRelease: boolean[] = []
			onRelease = () => {
				doneAtRelease = [terminalDone, connectionDone]
			}
			await sandbox.destroy()
			expect(doneAtRelease).toEqual([true, true])
			expect(releases).toHaveLength(1)
		} finally {
			await new Promise((resolve) => server.close(resolve))
		}
	})

	it('refuses every call afterwards with SandboxDestroyedError naming the operation', async () => {
		await sandbox.destroy()
		const refusals: Array<[string, Promise<unknown>]> = [
			['exec', sandbox.exec('true')],
			['writeFile', sandbox.writeFile('a', 'b')],
			['readFile', sandbox.readFile('a')],
			['listFiles', sandbox.listFiles('.')],
			['openTerminal', sandbox.openTerminal({ size: { cols: 80, rows: 24 } })],
			['openTcpConnection', sandbox.openTcpConnection({ port: 1 })],
		]
		for (const [operation, pending] of refusals) {
			const error = await pending.catch((caught: unknown) => caught)
			expect(error).toBeInstanceOf(SandboxDestroyedError)
			expect((error as SandboxDestroyedError).operation).toBe(operation)
		}
		expect(() => sandbox.readFileStream('a')).toThrow(SandboxDestroyedError)
		expect(() => sandbox.walkFiles('/', { maxEntries: 1 })).toThrow(SandboxDestroyedError)
	})

	it('aborts a command in flight so it resolves as aborted', async () => {
		const pending = sandbox.exec('sleep', ['10'])
		await new Promise((resolve) => setTimeout(resolve, 100))
		await sandbox.destroy()
		const result = await pending
		expect(result.aborted).toBe(true)
		expect(result.exitCode).not.toBe(0)
	})
})

describe('retirement after an unconfirmable cancellation', () => {
	let fake: FakeAgent | undefined
	afterEach(async () => {
		await fake?.close()
		fake = undefined
	})

	it('retires the unit, records the observation on the error, and fences the handle', async () => {
		fake = await startFakeAgent((request, socket) => {
			if (request.op === 'healthz') return reply(socket, healthzReply([]))
			if (request.op === 'reserve-execution') {
				return reply(socket, {
					ok: true,
					protocolVersion: 2,
					executionId: 'exec_0b6f3c2e-6a51-4c0e-9d55-8f1f3e3b6a10',
					leaseExpiresAt: Date.now() + 30_000,
				})
			}
			if (request.op === 'execute') {
				socket.write(encodeFrame({ type: 'stdout_delta', data: 'working' }))
				return
			}
			reply(socket, { ok: false, error: 'cancellation_unconfirmed' })
		})
		const retired: Error[] = []
		const observation: SandboxRetirementObservation = { accepted: true }
		const fenced = createAgentSandbox({
			id: 'wedged',
			transport: new AgentTransport({ kind: 'unix', path: fake.path ?? '' }),
			rootDir: '/w',
			environment: 'basic',
			release: async () => {},
			retire: async (error) => {
				retired.push(error)
				return observation
			},
			execution: { cancelConfirmTimeoutMs: 300, controlRequestTimeoutMs: 100 },
		})
		const controller = new AbortController()
		setTimeout(() => controller.abort(), 50)
		const error = await fenced
			.exec('sleep', ['100'], { signal: controller.signal })
			.catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(RemoteCancellationUnknownError)
		expect((error as RemoteCancellationUnknownError).retirement).toEqual(observation)
		expect(retired).toEqual([error])
		expect(fenced.status).toBe('destroyed')
		await expect(fenced.readFile('a')).rejects.toBeInstanceOf(SandboxRetiredError)
		await fenced.destroy()
	})
})
