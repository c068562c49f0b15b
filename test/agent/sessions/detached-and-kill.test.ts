import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { rawRequest } from '../../helpers/raw-agent-client.js'
import {
	attachSession,
	isAlive,
	output,
	persistentTerminal,
	procIds,
	readNumberFile,
	readSession,
	request,
	StreamSet,
	summaryOf,
	waitForExit,
	waitForOutput,
	waitUntil,
} from './session-kit.js'

let agent: StartedAgent
const streams = new StreamSet()
let counter = 0
const nextId = (label: string) => `${label}-${++counter}`

/**
 * A node program that records SIGTERM/SIGINT/SIGHUP in `<name>.signals`, then exits 0 — once the
 * job named by its second argument (if any) has recorded its own, so the leader never exits first.
 */
const JOB = `
const fs = require('node:fs')
const [name, waitFor] = process.argv.slice(2)
const settled = () => !waitFor || fs.existsSync(waitFor + '.signals')
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
	process.on(signal, () => {
		fs.appendFileSync(name + '.signals', signal + '\\n')
		const poll = setInterval(() => {
			if (settled()) process.exit(0)
		}, 10)
		poll.ref()
	})
}
fs.writeFileSync(name + '.pid', String(process.pid))
setInterval(() => {}, 1000)
`

beforeAll(async () => {
	agent = await startAgent({
		env: {
			NAMZU_AGENT_SESSION_KILL_CONFIRM_TIMEOUT_MS: '3000',
			NAMZU_AGENT_TEST_MARKER: 'must-not-leak',
		},
	})
	writeFileSync(join(agent.workspace, 'job.js'), JOB)
})
afterEach(() => streams.closeAll())
afterAll(async () => {
	streams.closeAll()
	await agent?.stop()
})

/** A detached session: `main` is the session leader, `bg` a job it started with `&`. */
async function startJobs(tag: string): Promise<{ id: string; main: number; bg: number }> {
	const id = nextId(tag)
	const node = process.execPath
	const reply = await request(agent, 'start-detached', {
		sessionId: id,
		command: '/bin/sh',
		args: ['-c', `'${node}' job.js ${id}-bg & exec '${node}' job.js ${id}-main ${id}-bg`],
	})
	expect(reply).toMatchObject({ ok: true, sessionId: id, kind: 'detached', state: 'running' })
	const main = await readNumberFile(join(agent.workspace, `${id}-main.pid`))
	const bg = await readNumberFile(join(agent.workspace, `${id}-bg.pid`))
	return { id, main, bg }
}

function signalsOf(name: string): string[] {
	const path = join(agent.workspace, `${name}.signals`)
	return existsSync(path) ? readFileSync(path, 'utf8').trim().split('\n') : []
}

describe('start-detached', () => {
	it('runs without a tty, with stdin at EOF, as the leader of its own kernel session', async () => {
		const id = nextId('shape')
		mkdirSync(join(agent.workspace, 'sub'), { recursive: true })
		const reply = await request(agent, 'start-detached', {
			sessionId: id,
			command: '/bin/sh',
			args: ['-c', 'tty; cat; echo "stdin-eof"; pwd; env; echo err-line >&2; exec sleep 30'],
			cwd: 'sub',
			env: { CALLER_VALUE: 'from-caller' },
		})
		expect(reply).toMatchObject({
			ok: true,
			sessionId: id,
			kind: 'detached',
			command: '/bin/sh',
			state: 'running',
			attached: false,
			startedAt: expect.any(Number),
		})
		const pid = Number(reply.pid)
		await waitUntil(
			async () => String((await readSession(agent, id, 0)).chunk).includes('err-line'),
			'output',
		)
		const { chunk } = await readSession(agent, id, 0)
		expect(chunk).toContain('not a tty')
		expect(chunk).toContain('stdin-eof')
		expect(chunk).toContain(join(agent.workspace, 'sub'))
		expect(chunk).toContain('CALLER_VALUE=from-caller')
		expect(chunk).not.toMatch(/NAMZU_[A-Z_]*=/)
		expect(chunk).not.toContain('must-not-leak')
		const ids = procIds(pid)
		expect(ids.session).toBe(pid)
		expect(ids.pgrp).toBe(pid)
		expect(ids.session).not.toBe(procIds(agent.process.pid ?? 0).session)
		await request(agent, 'kill-session', { sessionId: id })
	})

	it('follows a detached program through attach-session: replay, live output, then exit', async () => {
		const id = nextId('follow')
		await request(agent, 'start-detached', {
			sessionId: id,
			command: '/bin/sh',
			args: ['-c', 'echo one; sleep 0.3; echo two; exit 5'],
		})
		const stream = attachSession(streams, agent, id, { fromOffset: 0 })
		const exit = await stream.waitFor((event) => event.type === 'exit')
		expect(exit).toEqual({ type: 'exit', exitCode: 5, nextOffset: 8 })
		expect(output(stream)).toBe('one\ntwo\n')
		await stream.closed()
		expect(stream.terminated()).toBe(true)
		expect(await readSession(agent, id)).toMatchObject({
			chunk: 'one\ntwo\n',
			nextOffset: 8,
			droppedBytes: 0,
			status: 'exited',
			exitCode: 5,
		})
	})

	it('refuses by code: missing command, bad id, held id, unspawnable program, escaping cwd', async () => {
		expect(await request(agent, 'start-detached', { sessionId: 'x1' })).toEqual({
			ok: false,
			error: 'missing_command',
		})
		expect(
			await request(agent, 'start-detached', { sessionId: '-bad', command: '/bin/true' }),
		).toEqual({ ok: false, error: 'invalid_session_id' })
		const held = nextId('held')
		await request(agent, 'start-detached', { sessionId: held, command: '/bin/sleep', args: ['5'] })
		expect(
			await request(agent, 'start-detached', { sessionId: held, command: '/bin/true' }),
		).toEqual({ ok: false, error: 'session_exists' })
		const failed = await request(agent, 'start-detached', {
			sessionId: nextId('nope'),
			command: '/nonexistent/program',
		})
		expect(failed).toMatchObject({ ok: false, error: 'spawn_failed' })
		expect(String(failed.message)).toContain('ENOENT')
		expect(
			await request(agent, 'start-detached', {
				sessionId: nextId('escape'),
				command: '/bin/true',
				cwd: '/etc',
			}),
		).toMatchObject({ ok: false, error: 'path_escapes_workspace' })
		await request(agent, 'kill-session', { sessionId: held })
	})
})

describe('attach-session and list-sessions', () => {
	it('refuses an unknown session and an offset beyond the end (naming nextOffset), in the stream shape', async () => {
		const unknown = await rawRequest(agent, {
			op: 'attach-session',
			body: { sessionId: 'never-started' },
		})
		expect(unknown.frames).toEqual([{ type: 'error', error: 'unknown_session' }])
		expect(unknown.terminated).toBe(true)
		const id = nextId('offset')
		await request(agent, 'start-detached', {
			sessionId: id,
			command: '/bin/sh',
			args: ['-c', 'printf abc'],
		})
		await waitForExit(agent, id)
		const beyond = await rawRequest(agent, {
			op: 'attach-session',
			body: { sessionId: id, fromOffset: 4 },
		})
		expect(beyond.frames).toEqual([{ type: 'error', error: 'invalid_offset', nextOffset: 3 }])
		expect(await readSession(agent, id, 3)).toMatchObject({ chunk: '', nextOffset: 3 })
	})

	it('lists every session with its summary fields', async () => {
		const terminalId = nextId('listed-terminal')
		const stream = persistentTerminal(streams, agent, terminalId)
		await stream.waitFor((event) => event.type === 'data')
		const detachedId = nextId('listed-detached')
		await request(agent, 'start-detached', {
			sessionId: detachedId,
			command: '/bin/sh',
			args: ['-c', 'echo listed; exit 4'],
		})
		await waitForExit(agent, detachedId)
		expect(await summaryOf(agent, terminalId)).toEqual({
			sessionId: terminalId,
			kind: 'terminal',
			command: '/bin/sh',
			args: [],
			startedAt: expect.any(Number),
			lastOutputAt: expect.any(Number),
			nextOffset: expect.any(Number),
			droppedBytes: 0,
			state: 'running',
			attached: true,
		})
		expect(await summaryOf(agent, detachedId)).toEqual({
			sessionId: detachedId,
			kind: 'detached',
			command: '/bin/sh',
			args: ['-c', 'echo listed; exit 4'],
			startedAt: expect.any(Number),
			lastOutputAt: expect.any(Number),
			nextOffset: 7,
			droppedBytes: 0,
			state: 'exited',
			attached: false,
			exitCode: 4,
		})
		await request(agent, 'kill-session', { sessionId: terminalId })
	})
})

describe('kill-session', () => {
	it.each(['SIGTERM', 'SIGINT', 'SIGHUP'])(
		'sends %s to every process in the session, a job backgrounded with & included',
		async (signal) => {
			const { id, main, bg } = await startJobs(signal.toLowerCase())
			const reply = await request(agent, 'kill-session', { sessionId: id, signal })
			expect(reply).toMatchObject({ ok: true, sessionId: id, state: 'exited', killed: true })
			expect(Number(reply.signalled)).toBeGreaterThanOrEqual(2)
			await waitUntil(() => signalsOf(`${id}-bg`).length > 0, 'the background job')
			expect(signalsOf(`${id}-main`)).toEqual([signal])
			expect(signalsOf(`${id}-bg`)).toEqual([signal])
			await waitUntil(() => !isAlive(main) && !isAlive(bg), 'both processes gone')
			expect(await readSession(agent, id)).toMatchObject({ status: 'killed', exitCode: 0 })
		},
	)

	it('sends SIGKILL when asked, and by default, to the leader and the & job alike', async () => {
		for (const body of [{ signal: 'SIGKILL' }, {}]) {
			const { id, main, bg } = await startJobs('sigkill')
			const reply = await request(agent, 'kill-session', { sessionId: id, ...body })
			expect(reply).toMatchObject({ ok: true, state: 'exited', signal: 'SIGKILL', exitCode: 137 })
			await waitUntil(() => !isAlive(main) && !isAlive(bg), 'both processes gone')
			expect(signalsOf(`${id}-main`)).toEqual([])
			expect(signalsOf(`${id}-bg`)).toEqual([])
		}
	})

	it('coerces a signal outside the allow-list to SIGTERM', async () => {
		for (const signal of ['SIGUSR1', 'SIGSTOP', 'bogus', 9]) {
			const { id } = await startJobs('coerced')
			const reply = await request(agent, 'kill-session', { sessionId: id, signal })
			expect(reply).toMatchObject({ ok: true, state: 'exited' })
			await waitUntil(() => signalsOf(`${id}-bg`).length > 0, 'the background job')
			expect(signalsOf(`${id}-main`)).toEqual(['SIGTERM'])
			expect(signalsOf(`${id}-bg`)).toEqual(['SIGTERM'])
		}
	})

	it('ends a persistent terminal and every job its shell started; a repeat is idempotent', async () => {
		const id = nextId('terminal-kill')
		const stream = persistentTerminal(streams, agent, id)
		await stream.waitFor((event) => event.type === 'ready')
		stream.send({ type: 'input', data: 'sleep 300 & echo "BG=$!"\n' })
		const bg = Number((await waitForOutput(stream, /BG=(\d+)/))[1])
		expect(isAlive(bg)).toBe(true)
		const reply = await request(agent, 'kill-session', { sessionId: id })
		expect(reply).toMatchObject({ ok: true, state: 'exited', killed: true })
		await waitUntil(() => !isAlive(bg), 'the & job gone')
		await stream.waitFor((event) => event.type === 'exit')
		const again = await request(agent, 'kill-session', { sessionId: id, signal: 'SIGTERM' })
		expect(again).toMatchObject({ ok: true, state: 'exited', signalled: 0 })
	})

	it('refuses an unknown session and an invalid id', async () => {
		expect(await request(agent, 'kill-session', { sessionId: 'not-there' })).toEqual({
			ok: false,
			error: 'unknown_session',
		})
		expect(await request(agent, 'kill-session', { sessionId: 'a b' })).toEqual({
			ok: false,
			error: 'invalid_session_id',
		})
	})
})
