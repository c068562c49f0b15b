/** Session verbs of createAgentSandbox over the real agent (and a recording fake for the refusals). */
import { mkdirSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { connect, createServer, type Server, type Socket } from 'node:net'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { SandboxDestroyedError } from '../../../src/contract/errors.js'
import type { TerminalSession } from '../../../src/contract/sandbox.js'
import { SessionsUnsupportedError } from '../../../src/host/refusals/guest-feature-errors.js'
import { SessionRefusedError } from '../../../src/host/refusals/refusal-errors.js'
import { type AgentSandbox, createAgentSandbox } from '../../../src/host/sandbox/agent-sandbox.js'
import type { SessionTerminal } from '../../../src/host/sessions/agent-session-terminal.js'
import { AgentSessionDetachedError } from '../../../src/host/sessions/session-errors.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { SESSIONS_FEATURE } from '../../../src/wire/features.js'
import { encodeFrame } from '../../../src/wire/frame.js'
import { SESSION_SUMMARY_ECHO_BYTES } from '../../../src/wire/sessions.js'
import { spliceTunnel } from '../../../src/wire/tunnel-splice.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { type FakeAgent, healthzReply, reply, startFakeAgent } from '../fake-agent-server.js'

let agent: StartedAgent
const sandboxes: AgentSandbox[] = []
let counter = 0
const nextId = (label: string) => `${label}-${++counter}`

beforeAll(async () => {
	agent = await startAgent({ env: { NAMZU_AGENT_SESSION_KILL_CONFIRM_TIMEOUT_MS: '2000' } })
})
afterEach(async () => {
	await Promise.all(sandboxes.splice(0).map((sandbox) => sandbox.destroy()))
})
afterAll(async () => {
	await agent?.stop()
})

/** A fresh host-side handle on the same agent: what a second host process would build. */
function host(path = agent.socketPath ?? ''): AgentSandbox {
	const sandbox = createAgentSandbox({
		id: `sessions-${++counter}`,
		transport: new AgentTransport({ kind: 'unix', path }),
		rootDir: agent.workspace,
		environment: 'linux-namespace',
		release: async () => {},
	})
	sandboxes.push(sandbox)
	return sandbox
}

function collect(session: TerminalSession): { text: () => string } {
	let text = ''
	session.onData((chunk) => {
		text += chunk
	})
	return { text: () => text }
}

async function waitFor(predicate: () => boolean | Promise<boolean>, what: string): Promise<void> {
	for (let attempt = 0; attempt < 400; attempt++) {
		if (await predicate()) return
		await new Promise((resolve) => setTimeout(resolve, 25))
	}
	throw new Error(`timed out waiting for ${what}`)
}

async function detachError(terminal: SessionTerminal): Promise<AgentSessionDetachedError> {
	const error = await terminal.exited.then(
		() => undefined,
		(caught: unknown) => caught,
	)
	if (!(error instanceof AgentSessionDetachedError)) {
		throw new Error(`expected AgentSessionDetachedError, got ${String(error)}`)
	}
	return error
}

/** A unix-socket relay to the agent whose connections the test can cut. */
async function startRelay(): Promise<{
	path: string
	cut: () => void
	close: () => Promise<void>
}> {
	const path = join(agent.dir, `relay-${++counter}.sock`)
	const sockets = new Set<Socket>()
	const server: Server = createServer((client) => {
		const upstream = connect(agent.socketPath ?? '')
		for (const socket of [client, upstream]) {
			sockets.add(socket)
			socket.on('error', () => undefined)
			socket.on('close', () => sockets.delete(socket))
		}
		spliceTunnel(client, upstream)
	})
	await new Promise<void>((resolve) => server.listen(path, resolve))
	return {
		path,
		cut: () => {
			for (const socket of sockets) socket.destroy()
		},
		close: async () => {
			for (const socket of sockets) socket.destroy()
			await new Promise<void>((resolve) => server.close(() => resolve()))
			await rm(path, { force: true })
		},
	}
}

describe('persistent terminals through AgentSandbox', () => {
	it('outlives the host that opened it: another handle attaches, replays from an offset, then follows live', async () => {
		const id = nextId('handoff')
		const first = host()
		const opened = await first.openTerminal({
			size: { cols: 80, rows: 24 },
			sessionId: id,
			persistent: true,
		})
		expect(opened).toMatchObject({
			sessionId: id,
			kind: 'terminal',
			fromOffset: 0,
			droppedBytes: 0,
		})
		const firstText = collect(opened)
		opened.write('echo first-$((1+1))\n')
		await waitFor(() => /first-2\r\n/.test(firstText.text()), 'first output')
		const resumeAt = opened.nextOffset
		await first.destroy()
		const closed = await detachError(opened)
		expect(closed.reason).toBe('closed')
		expect(closed.nextOffset).toBe(resumeAt)

		const second = host()
		const [summary] = (await second.listSessions()).filter((row) => row.sessionId === id)
		expect(summary).toMatchObject({ state: 'running', attached: false, kind: 'terminal' })
		const replayed = await second.attachTerminal(id, { fromOffset: 0 })
		const replayText = collect(replayed)
		await waitFor(() => /first-2\r\n/.test(replayText.text()), 'the replay')
		await replayed.detach()

		const tail = await second.attachTerminal(id, {
			fromOffset: resumeAt,
			size: { cols: 91, rows: 17 },
		})
		expect(tail.fromOffset).toBe(resumeAt)
		const tailText = collect(tail)
		tail.write('echo second-$((2+2))\n')
		await waitFor(() => /second-4\r\n/.test(tailText.text()), 'live output')
		// The guest applies the attach size asynchronously; ask until it shows.
		await waitFor(async () => {
			tail.write('stty size\n')
			await new Promise((resolve) => setTimeout(resolve, 50))
			return /(?<!\d)17 91\r\n/.test(tailText.text())
		}, 'the attach size')
		tail.resize({ cols: 120, rows: 40 })
		await waitFor(async () => {
			tail.write('stty size\n')
			await new Promise((resolve) => setTimeout(resolve, 50))
			return /(?<!\d)40 120\r\n/.test(tailText.text())
		}, 'the resize')
		expect(tailText.text()).not.toContain('first-2')
		tail.write('exit 6\n')
		expect(await tail.exited).toEqual({ exitCode: 6 })
	})

	it('rejects the first attachment with reason superseded when a second one takes the session', async () => {
		const id = nextId('superseded')
		const opened = await host().openTerminal({
			size: { cols: 80, rows: 24 },
			sessionId: id,
			persistent: true,
		})
		const text = collect(opened)
		opened.write('echo one\n')
		await waitFor(() => /one\r\n/.test(text.text()), 'output')
		const taker = await host().attachTerminal(id)
		const error = await detachError(opened)
		expect(error).toMatchObject({
			name: 'AgentSessionDetachedError',
			reason: 'superseded',
			sessionId: id,
		})
		expect(error.nextOffset).toBe(opened.nextOffset)
		const takerText = collect(taker)
		taker.write('echo still-here\n')
		await waitFor(() => /still-here\r\n/.test(takerText.text()), 'the taker works')
		taker.kill('SIGKILL')
		expect(typeof (await taker.exited).exitCode).toBe('number')
	})

	it('rejects exited with reason connection-lost when the connection drops, and the program keeps running', async () => {
		const relay = await startRelay()
		try {
			const id = nextId('lost')
			const opened = await host(relay.path).openTerminal({
				size: { cols: 80, rows: 24 },
				sessionId: id,
				persistent: true,
			})
			const text = collect(opened)
			opened.write('echo before-cut\n')
			await waitFor(() => /before-cut\r\n/.test(text.text()), 'output')
			relay.cut()
			const error = await detachError(opened)
			expect(error.reason).toBe('connection-lost')
			expect(error.nextOffset).toBe(opened.nextOffset)
			const rejoined = await host().attachTerminal(id, { fromOffset: error.nextOffset })
			const rejoinedText = collect(rejoined)
			rejoined.write('echo after-cut\n')
			await waitFor(() => /after-cut\r\n/.test(rejoinedText.text()), 'the same shell')
			await host().killSession(id)
			await expect(rejoined.exited).resolves.toMatchObject({ exitCode: expect.any(Number) })
		} finally {
			await relay.close()
		}
	})

	it('leaves a plain terminal connection-bound: exited resolves with the exit, never rejects', async () => {
		const plain = await host().openTerminal({ size: { cols: 80, rows: 24 } })
		expect('sessionId' in plain).toBe(false)
		plain.write('exit 4\n')
		await expect(plain.exited).resolves.toEqual({ exitCode: 4 })
		const killed = await host().openTerminal({ size: { cols: 80, rows: 24 } })
		await (killed as TerminalSession & { close(): Promise<unknown> }).close()
		await expect(killed.exited).resolves.toMatchObject({ exitCode: expect.any(Number) })
	})
})

describe('detached programs and the other session verbs', () => {
	it('echoes a long command line cut to SESSION_SUMMARY_ECHO_BYTES and marked, while the program gets it whole', async () => {
		const id = nextId('long')
		const sandbox = host()
		const long = 'a'.repeat(100_000)
		const started = await sandbox.startDetached({
			sessionId: id,
			command: '/bin/sh',
			args: ['-c', 'printf %s "$0" | wc -c; exec sleep 60', long],
		})
		expect(started.commandLineTruncated).toBe(true)
		expect(started.command.length + started.args.join('').length).toBe(SESSION_SUMMARY_ECHO_BYTES)
		await waitFor(async () => (await sandbox.readSession(id)).chunk.includes('100000'), 'output')
		const listed = (await sandbox.listSessions()).find((row) => row.sessionId === id)
		expect(listed).toMatchObject({ commandLineTruncated: true, args: started.args })
		await sandbox.killSession(id)
	})

	it('starts a detached program in a relative cwd, reads it, lists it and kills it', async () => {
		const id = nextId('server')
		mkdirSync(join(agent.workspace, 'srv'), { recursive: true })
		const sandbox = host()
		const started = await sandbox.startDetached({
			sessionId: id,
			command: '/bin/sh',
			args: ['-c', 'pwd; echo "v=$VALUE"; exec sleep 60'],
			cwd: 'srv',
			env: { VALUE: 'given' },
		})
		expect(started).toMatchObject({
			sessionId: id,
			kind: 'detached',
			state: 'running',
			pid: expect.any(Number),
		})
		await waitFor(async () => (await sandbox.readSession(id)).chunk.includes('v=given'), 'output')
		const read = await sandbox.readSession(id, { fromOffset: 0 })
		expect(read).toEqual({
			chunk: `${join(agent.workspace, 'srv')}\nv=given\n`,
			nextOffset: read.chunk.length,
			droppedBytes: 0,
			status: 'running',
		})
		const listed = await sandbox.listSessions()
		expect(listed.find((row) => row.sessionId === id)).toMatchObject({
			command: '/bin/sh',
			args: ['-c', 'pwd; echo "v=$VALUE"; exec sleep 60'],
			state: 'running',
		})
		const killed = await sandbox.killSession(id, { signal: 'SIGTERM' })
		expect(killed).toMatchObject({ state: 'exited', signal: 'SIGTERM', killed: true })
		expect(killed.signalled).toBeGreaterThanOrEqual(1)
		expect(await sandbox.readSession(id)).toMatchObject({ status: 'killed', exitCode: 143 })
	})

	it('reads a session while a terminal is attached without displacing it', async () => {
		const id = nextId('read-attached')
		const sandbox = host()
		const attached = await sandbox.openTerminal({
			size: { cols: 80, rows: 24 },
			sessionId: id,
			persistent: true,
		})
		const text = collect(attached)
		attached.write('echo polled-$((5*5))\n')
		await waitFor(() => /polled-25\r\n/.test(text.text()), 'output')
		const read = await host().readSession(id)
		expect(read.chunk).toContain('polled-25')
		expect(read.status).toBe('running')
		attached.write('echo still-attached\n')
		await waitFor(() => /still-attached\r\n/.test(text.text()), 'the terminal keeps working')
		expect((await sandbox.listSessions()).find((row) => row.sessionId === id)?.attached).toBe(true)
		await sandbox.killSession(id)
		expect(typeof (await attached.exited).exitCode).toBe('number')
	})

	it('names guest refusals with SessionRefusedError: code, session id and nextOffset', async () => {
		const id = nextId('refused')
		const sandbox = host()
		await sandbox.startDetached({ sessionId: id, command: '/bin/sh', args: ['-c', 'printf 12345'] })
		await waitFor(
			async () =>
				(await sandbox.listSessions()).find((row) => row.sessionId === id)?.state === 'exited',
			'exit',
		)
		const duplicate = await sandbox
			.startDetached({ sessionId: id, command: '/bin/true' })
			.catch((error: unknown) => error)
		expect(duplicate).toBeInstanceOf(SessionRefusedError)
		expect(duplicate).toMatchObject({ refusal: 'session_exists', sessionId: id })
		const beyond = await sandbox
			.readSession(id, { fromOffset: 99 })
			.catch((error: unknown) => error)
		expect(beyond).toMatchObject({
			name: 'SessionRefusedError',
			refusal: 'invalid_offset',
			nextOffset: 5,
		})
		await expect(sandbox.attachTerminal('nobody-here')).rejects.toMatchObject({
			name: 'SessionRefusedError',
			refusal: 'unknown_session',
		})
		await expect(sandbox.killSession('nobody-here')).rejects.toMatchObject({
			refusal: 'unknown_session',
		})
		await expect(
			sandbox.startDetached({ sessionId: nextId('bad'), command: '/nonexistent/x' }),
		).rejects.toMatchObject({ refusal: 'spawn_failed' })
		await expect(
			sandbox.openTerminal({
				size: { cols: 80, rows: 24 },
				sessionId: 'has space',
				persistent: true,
			}),
		).rejects.toMatchObject({ refusal: 'invalid_session_id' })
	})

	it('detaches its session terminals on destroy, leaves the programs to the unit, and refuses verbs after', async () => {
		const id = nextId('destroyed')
		const sandbox = host()
		const terminal = await sandbox.openTerminal({
			size: { cols: 80, rows: 24 },
			sessionId: id,
			persistent: true,
		})
		await sandbox.destroy()
		expect((await detachError(terminal)).reason).toBe('closed')
		await expect(sandbox.listSessions()).rejects.toBeInstanceOf(SandboxDestroyedError)
		await expect(sandbox.attachTerminal(id)).rejects.toBeInstanceOf(SandboxDestroyedError)
		await host().killSession(id)
	})
})

describe('a guest without the sessions feature', () => {
	let fake: FakeAgent | undefined
	afterEach(async () => {
		await fake?.close()
		fake = undefined
	})

	it('refuses every session verb with SessionsUnsupportedError before dialing any session op', async () => {
		fake = await startFakeAgent((request, socket) => {
			if (request.op === 'healthz') reply(socket, healthzReply(['write-file-parts']))
			else reply(socket, { ok: false, error: `unexpected ${request.op}` })
		})
		const sandbox = host(fake.path)
		const calls: Array<[string, () => Promise<unknown>]> = [
			['startDetached', () => sandbox.startDetached({ sessionId: 's', command: '/bin/true' })],
			['attachTerminal', () => sandbox.attachTerminal('s')],
			[
				'openTerminal',
				() =>
					sandbox.openTerminal({ size: { cols: 80, rows: 24 }, sessionId: 's', persistent: true }),
			],
			['readSession', () => sandbox.readSession('s')],
			['listSessions', () => sandbox.listSessions()],
			['killSession', () => sandbox.killSession('s')],
		]
		for (const [operation, call] of calls) {
			const error = await call().catch((caught: unknown) => caught)
			expect(error).toBeInstanceOf(SessionsUnsupportedError)
			expect(error).toMatchObject({ operation, reason: 'sessions-unsupported' })
		}
		expect(fake.requests.map((request) => request.op)).toEqual(['healthz'])
	})

	it('sends a plain openTerminal exactly as before: no healthz, no session fields', async () => {
		fake = await startFakeAgent((request, socket) => {
			if (request.op === 'terminal') socket.write(encodeFrame({ type: 'ready' }))
			else reply(socket, healthzReply([SESSIONS_FEATURE]))
		})
		const terminal = await host(fake.path).openTerminal({
			size: { cols: 80, rows: 24 },
			command: '/bin/sh',
		})
		expect(fake.requests.map((request) => request.op)).toEqual(['terminal'])
		expect(fake.requests[0]?.body).toEqual({ command: '/bin/sh', cols: 80, rows: 24 })
		await (terminal as TerminalSession & { close(): Promise<unknown> }).close()
	})
})
