import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { SESSIONS_FEATURE } from '../../../src/wire/features.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { rawRequest } from '../../helpers/raw-agent-client.js'
import {
	attachSession,
	isAlive,
	readNumberFile,
	readSession,
	request,
	StreamSet,
	summaryOf,
	waitForExit,
	waitUntil,
} from './session-kit.js'

const LOG_BYTES = 4096
const TTL_MS = 1500
let agent: StartedAgent
const streams = new StreamSet()

beforeAll(async () => {
	agent = await startAgent({
		env: {
			NAMZU_AGENT_MAX_SESSIONS: '3',
			NAMZU_AGENT_SESSION_LOG_BYTES: String(LOG_BYTES),
			NAMZU_AGENT_SESSION_TERMINAL_TTL_MS: String(TTL_MS),
			NAMZU_AGENT_SESSION_KILL_CONFIRM_TIMEOUT_MS: '2000',
		},
	})
})
afterEach(() => streams.closeAll())
afterAll(async () => {
	streams.closeAll()
	await agent?.stop()
})

async function sessionIds(): Promise<string[]> {
	const reply = await request(agent, 'list-sessions')
	return (reply.sessions as { sessionId: string }[]).map((session) => session.sessionId)
}

async function waitUntilEmpty(): Promise<void> {
	await waitUntil(async () => (await sessionIds()).length === 0, 'every record expired')
}

describe('session limits', () => {
	it('advertises sessions in healthz and holds none before any is asked for', async () => {
		const health = await request(agent, 'healthz')
		expect(SESSIONS_FEATURE).toBe('sessions')
		expect(health.features).toContain(SESSIONS_FEATURE)
		expect(health.protocolVersion).toBe(2)
		expect(await request(agent, 'list-sessions')).toEqual({ ok: true, sessions: [] })
	})

	it('keeps at most NAMZU_AGENT_SESSION_LOG_BYTES per session and reports evicted bytes as droppedBytes', async () => {
		const total = 20_000
		await request(agent, 'start-detached', {
			sessionId: 'evicted',
			command: '/bin/sh',
			args: ['-c', `head -c ${total} /dev/zero | tr '\\0' y`],
		})
		await waitForExit(agent, 'evicted')
		const dropped = total - LOG_BYTES
		expect(await summaryOf(agent, 'evicted')).toMatchObject({
			nextOffset: total,
			droppedBytes: dropped,
		})
		const read = await readSession(agent, 'evicted', 0)
		expect(read).toMatchObject({ fromOffset: dropped, droppedBytes: dropped, nextOffset: total })
		expect(String(read.chunk)).toBe('y'.repeat(LOG_BYTES))
		const stream = attachSession(streams, agent, 'evicted', { fromOffset: 100 })
		expect(await stream.waitFor((event) => event.type === 'ready')).toMatchObject({
			fromOffset: dropped,
			droppedBytes: dropped - 100,
			nextOffset: total,
		})
		const data = await stream.waitFor((event) => event.type === 'data')
		expect(data.offset).toBe(dropped)
		await stream.waitFor((event) => event.type === 'exit')
	})

	it('detaches a reader that falls more than one log behind as slow_reader, without signalling', async () => {
		await request(agent, 'start-detached', {
			sessionId: 'flood',
			command: '/bin/sh',
			args: ['-c', "sleep 0.3; head -c 4000000 /dev/zero | tr '\\0' z; exec sleep 30"],
		})
		const stream = attachSession(streams, agent, 'flood')
		await stream.waitFor((event) => event.type === 'ready')
		stream.socket.pause()
		await waitUntil(
			async () => Number((await summaryOf(agent, 'flood'))?.nextOffset) >= 4_000_000,
			'the flood written',
		)
		stream.socket.resume()
		const detached = await stream.waitFor((event) => event.type === 'detached')
		expect(detached).toMatchObject({ reason: 'slow_reader', nextOffset: expect.any(Number) })
		expect(Number(detached.nextOffset)).toBeLessThan(4_000_000)
		await stream.closed()
		expect(await summaryOf(agent, 'flood')).toMatchObject({ state: 'running', attached: false })
		await request(agent, 'kill-session', { sessionId: 'flood' })
	})

	it('refuses a session beyond NAMZU_AGENT_MAX_SESSIONS, counting exited records until their TTL', async () => {
		await waitUntilEmpty()
		for (const id of ['cap-1', 'cap-2', 'cap-3']) {
			expect(
				await request(agent, 'start-detached', {
					sessionId: id,
					command: '/bin/sleep',
					args: ['30'],
				}),
			).toMatchObject({ ok: true })
		}
		expect(
			await request(agent, 'start-detached', { sessionId: 'cap-4', command: '/bin/true' }),
		).toEqual({
			ok: false,
			error: 'session_capacity',
			message: 'session_capacity: limit 3 (NAMZU_AGENT_MAX_SESSIONS)',
		})
		const terminal = await rawRequest(agent, {
			op: 'terminal',
			body: { cols: 80, rows: 24, sessionId: 'cap-4', persistent: true },
		})
		expect(terminal.frames).toEqual([{ type: 'error', error: 'session_capacity' }])
		await request(agent, 'kill-session', { sessionId: 'cap-1' })
		// Exited, but still held until its TTL.
		expect(
			await request(agent, 'start-detached', { sessionId: 'cap-4', command: '/bin/true' }),
		).toMatchObject({ ok: false, error: 'session_capacity' })
		await waitUntil(async () => !(await sessionIds()).includes('cap-1'), 'cap-1 expired')
		expect(
			await request(agent, 'start-detached', { sessionId: 'cap-4', command: '/bin/true' }),
		).toMatchObject({ ok: true })
		for (const id of ['cap-2', 'cap-3']) await request(agent, 'kill-session', { sessionId: id })
	})

	it('keeps an exited session for NAMZU_AGENT_SESSION_TERMINAL_TTL_MS, then forgets it', async () => {
		await waitUntilEmpty()
		expect(
			await request(agent, 'start-detached', {
				sessionId: 'ttl',
				command: '/bin/sh',
				args: ['-c', 'echo short-lived'],
			}),
		).toMatchObject({ ok: true })
		await waitForExit(agent, 'ttl')
		const exitedAt = Date.now()
		expect(await readSession(agent, 'ttl')).toMatchObject({ chunk: 'short-lived\n' })
		await waitUntil(async () => !(await sessionIds()).includes('ttl'), 'ttl expired')
		expect(Date.now() - exitedAt).toBeGreaterThanOrEqual(TTL_MS - 200)
		const gone = await rawRequest(agent, { op: 'attach-session', body: { sessionId: 'ttl' } })
		expect(gone.frames).toEqual([{ type: 'error', error: 'unknown_session' }])
		// The id is free again.
		expect(
			await request(agent, 'start-detached', { sessionId: 'ttl', command: '/bin/true' }),
		).toMatchObject({ ok: true })
	})

	it('validates session ids: 1-64 characters, alphanumeric first, then [A-Za-z0-9._-]', async () => {
		for (const sessionId of ['', '.hidden', '-dash', 'a'.repeat(65), 'sp ace', 'slash/x', 7]) {
			expect(await request(agent, 'start-detached', { sessionId, command: '/bin/true' })).toEqual({
				ok: false,
				error: 'invalid_session_id',
			})
		}
		await waitUntilEmpty()
		for (const sessionId of ['a', `Z${'9'.repeat(63)}`, 'x.y_z-1']) {
			expect(
				await request(agent, 'start-detached', { sessionId, command: '/bin/true' }),
			).toMatchObject({ ok: true, sessionId })
		}
	})
})

describe('sessions and the agent process', () => {
	it('ends every session, terminal and detached, when the agent is stopped with SIGTERM', async () => {
		const own = await startAgent({ env: { NAMZU_AGENT_SHUTDOWN_DEADLINE_MS: '3000' } })
		try {
			const detached = await request(own, 'start-detached', {
				sessionId: 'outlive-me',
				command: '/bin/sleep',
				args: ['60'],
			})
			const pidFile = join(own.workspace, 'shell.pid')
			await rawRequest(
				own,
				{
					op: 'terminal',
					body: {
						cols: 80,
						rows: 24,
						sessionId: 'terminal-too',
						persistent: true,
						command: '/bin/sh',
						args: ['-c', `echo $$ > ${pidFile}; exec sleep 60`],
					},
				},
				{ timeoutMs: 50 },
			)
			const shell = await readNumberFile(pidFile)
			const pids = [Number(detached.pid), shell]
			expect(pids.every(isAlive)).toBe(true)
			const exited = new Promise((resolve) => own.process.once('exit', resolve))
			own.process.kill('SIGTERM')
			await exited
			await waitUntil(() => !pids.some(isAlive), 'every session process gone')
		} finally {
			await own.stop()
		}
	})
})

describe('session configuration', () => {
	it('refuses to start with a non-positive session variable, naming it', async () => {
		await expect(startAgent({ env: { NAMZU_AGENT_MAX_SESSIONS: '0' } })).rejects.toThrow(
			/NAMZU_AGENT_MAX_SESSIONS/,
		)
		await expect(startAgent({ env: { NAMZU_AGENT_SESSION_LOG_BYTES: 'lots' } })).rejects.toThrow(
			/NAMZU_AGENT_SESSION_LOG_BYTES/,
		)
	})
})
