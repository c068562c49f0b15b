import { afterEach, describe, expect, it, vi } from 'vitest'
import type { OpContext } from '../../../src/agent/handler/op-context.js'
import { OpRefusal } from '../../../src/agent/handler/op-refusal.js'
import { attachSession } from '../../../src/agent/ops/attach-session.js'
import { killSession } from '../../../src/agent/ops/kill-session.js'
import { listSessions } from '../../../src/agent/ops/list-sessions.js'
import { coalesceEntries } from '../../../src/agent/sessions/session-attachment.js'
import {
	DEFAULT_SESSION_CONFIG,
	loadSessionConfig,
} from '../../../src/agent/sessions/session-config.js'
import {
	existingSessionRegistry,
	SessionRegistry,
} from '../../../src/agent/sessions/session-registry.js'
import {
	parseAttachSession,
	parseKillSession,
	parsePersistentTerminal,
	parseStartDetached,
} from '../../../src/agent/sessions/session-request.js'
import {
	isSessionId,
	SESSION_SIGNALS,
	SESSION_SUMMARY_ECHO_BYTES,
	sessionSignal,
	summaryCommandLine,
} from '../../../src/wire/sessions.js'

function refusalOf(run: () => unknown): string | undefined {
	try {
		run()
	} catch (error) {
		if (error instanceof OpRefusal) return error.error
		throw error
	}
	return undefined
}

afterEach(() => {
	vi.useRealTimers()
})

describe('session ids', () => {
	it.each([
		['a', true],
		['A1', true],
		['x.y_z-1', true],
		[`a${'b'.repeat(63)}`, true],
		[`a${'b'.repeat(64)}`, false],
		['', false],
		['.a', false],
		['_a', false],
		['-a', false],
		['a b', false],
		['a/b', false],
		['ä', false],
		[42, false],
		[undefined, false],
	])('isSessionId(%j) is %s', (value, expected) => {
		expect(isSessionId(value)).toBe(expected)
	})
})

describe('the command line a summary echoes', () => {
	const bound = SESSION_SUMMARY_ECHO_BYTES
	it.each([
		['short', 'sh', ['-c', 'x'], { command: 'sh', args: ['-c', 'x'] }],
		[
			'exactly the bound',
			'c',
			['a'.repeat(bound - 1)],
			{ command: 'c', args: ['a'.repeat(bound - 1)] },
		],
		[
			'an argument past it, cut',
			'c',
			['a'.repeat(bound - 2), 'bcd'],
			{ command: 'c', args: ['a'.repeat(bound - 2), 'b'], commandLineTruncated: true },
		],
		[
			'arguments after the bound, dropped',
			'c',
			['a'.repeat(bound - 1), 'b'],
			{ command: 'c', args: ['a'.repeat(bound - 1)], commandLineTruncated: true },
		],
		[
			'a command past it',
			'c'.repeat(bound + 5),
			['x'],
			{ command: 'c'.repeat(bound), args: [], commandLineTruncated: true },
		],
	])('%s', (_title, command, args, expected) => {
		expect(summaryCommandLine(command, args)).toEqual(expected)
	})
})

describe('session signals', () => {
	const table: Array<[unknown, string]> = [
		...SESSION_SIGNALS.map((signal): [unknown, string] => [signal, signal]),
		['SIGUSR1', 'SIGTERM'],
		['SIGSTOP', 'SIGTERM'],
		['sigkill', 'SIGTERM'],
		[9, 'SIGTERM'],
		[undefined, 'SIGTERM'],
	]
	it.each(table)('sessionSignal(%j) is %s', (value, expected) => {
		expect(sessionSignal(value)).toBe(expected)
	})

	it('kill-session defaults to SIGKILL and coerces anything outside the allow-list to SIGTERM', () => {
		expect(parseKillSession({ sessionId: 's' })).toEqual({ sessionId: 's', signal: 'SIGKILL' })
		expect(parseKillSession({ sessionId: 's', signal: 'SIGQUIT' }).signal).toBe('SIGTERM')
		expect(parseKillSession({ sessionId: 's', signal: 'SIGHUP' }).signal).toBe('SIGHUP')
		expect(refusalOf(() => parseKillSession({}))).toBe('invalid_session_id')
	})
})

describe('session request bodies', () => {
	it.each([
		[{}, undefined, undefined],
		[{ sessionId: 'work', persistent: true }, 'work', undefined],
		[{ persistent: true }, undefined, 'invalid_session_id'],
		[{ sessionId: 'bad id', persistent: true }, undefined, 'invalid_session_id'],
		[{ sessionId: 'work' }, undefined, 'invalid_session_request'],
		[{ sessionId: 'work', persistent: false }, undefined, 'invalid_session_request'],
	])('a terminal body %j is persistent as %j (refusal %j)', (body, id, refusal) => {
		expect(refusalOf(() => parsePersistentTerminal(body))).toBe(refusal)
		if (refusal === undefined) expect(parsePersistentTerminal(body)).toBe(id)
	})

	it('start-detached needs an id and a command; args, cwd and env are checked', () => {
		expect(parseStartDetached({ sessionId: 'd', command: 'ls' })).toEqual({
			sessionId: 'd',
			command: 'ls',
			args: [],
		})
		expect(refusalOf(() => parseStartDetached({ sessionId: 'd' }))).toBe('missing_command')
		expect(refusalOf(() => parseStartDetached({ sessionId: 'd', command: '' }))).toBe(
			'missing_command',
		)
		expect(refusalOf(() => parseStartDetached({ command: 'ls' }))).toBe('invalid_session_id')
		expect(refusalOf(() => parseStartDetached({ sessionId: 'd', command: 'ls', args: [1] }))).toBe(
			'invalid_args',
		)
		expect(
			refusalOf(() => parseStartDetached({ sessionId: 'd', command: 'ls', env: { A: 1 } })),
		).toBe('invalid_env')
	})

	it('attach-session follows by default, takes an optional size, and refuses a bad offset', () => {
		expect(parseAttachSession({ sessionId: 's' })).toEqual({ sessionId: 's', follow: true })
		expect(
			parseAttachSession({ sessionId: 's', fromOffset: 5, follow: false, cols: 9, rows: 8 }),
		).toEqual({ sessionId: 's', fromOffset: 5, follow: false, size: { cols: 9, rows: 8 } })
		expect(parseAttachSession({ sessionId: 's', heartbeatMs: 500 })).toEqual({
			sessionId: 's',
			follow: true,
		})
		for (const fromOffset of [-1, 1.5, '3', Number.MAX_SAFE_INTEGER + 2]) {
			expect(refusalOf(() => parseAttachSession({ sessionId: 's', fromOffset }))).toBe(
				'invalid_offset',
			)
		}
	})
})

describe('coalesceEntries', () => {
	const entry = (stream: 'stdout' | 'stderr', offset: number, text: string) => ({
		stream,
		offset,
		data: Buffer.from(text),
	})

	it('joins consecutive entries of one stream and splits on a stream change or the byte bound', () => {
		const runs = coalesceEntries(
			[
				entry('stdout', 0, 'ab'),
				entry('stdout', 2, 'cd'),
				entry('stderr', 4, 'E'),
				entry('stdout', 5, 'fgh'),
				entry('stdout', 8, 'ij'),
			],
			4,
		)
		expect(runs.map((run) => [run.stream, run.offset, run.data.toString()])).toEqual([
			['stdout', 0, 'abcd'],
			['stderr', 4, 'E'],
			['stdout', 5, 'fgh'],
			['stdout', 8, 'ij'],
		])
		expect(coalesceEntries([])).toEqual([])
	})
})

describe('session configuration', () => {
	it('defaults to 16 sessions, 1 MiB each, a 10 minute TTL and a 5 s kill confirmation', () => {
		expect(loadSessionConfig({})).toEqual({
			maxSessions: 16,
			logBytes: 1024 * 1024,
			terminalTtlMs: 600_000,
			killConfirmTimeoutMs: 5000,
		})
		expect(DEFAULT_SESSION_CONFIG).toEqual(loadSessionConfig({}))
	})

	it.each([
		'NAMZU_AGENT_MAX_SESSIONS',
		'NAMZU_AGENT_SESSION_LOG_BYTES',
		'NAMZU_AGENT_SESSION_TERMINAL_TTL_MS',
		'NAMZU_AGENT_SESSION_KILL_CONFIRM_TIMEOUT_MS',
	])('refuses a bad %s by name', (variable) => {
		for (const raw of ['0', '-1', 'x', '1.5']) {
			expect(() => loadSessionConfig({ [variable]: raw })).toThrow(variable)
		}
	})
})

describe('SessionRegistry', () => {
	const config = { maxSessions: 2, logBytes: 8, terminalTtlMs: 1000, killConfirmTimeoutMs: 10 }

	it('refuses a held id and a full registry, and forgets an exited record after the TTL', () => {
		vi.useFakeTimers()
		const registry = new SessionRegistry(config)
		const first = registry.create('one', 'detached', 'true', [])
		expect(refusalOf(() => registry.create('one', 'detached', 'true', []))).toBe('session_exists')
		registry.create('two', 'terminal', 'sh', [])
		expect(refusalOf(() => registry.create('three', 'detached', 'true', []))).toBe(
			'session_capacity',
		)
		first.markExited(0, null)
		vi.advanceTimersByTime(999)
		expect(registry.get('one')).toBe(first)
		vi.advanceTimersByTime(1)
		expect(registry.get('one')).toBeUndefined()
		expect(registry.create('three', 'detached', 'true', []).sessionId).toBe('three')
	})

	it('keeps one offset space in the ring and reports a kill-requested exit as killed', () => {
		const registry = new SessionRegistry(config)
		const session = registry.create('ring', 'detached', 'true', [])
		session.appendText('stdout', 'abcdef')
		session.appendText('stderr', 'ghij')
		expect(session.summary()).toMatchObject({ nextOffset: 10, droppedBytes: 2, state: 'running' })
		expect(session.status).toBe('running')
		session.kill('SIGTERM')
		session.markExited(null, 'SIGTERM')
		expect(session.summary()).toMatchObject({
			state: 'exited',
			exitCode: 143,
			signal: 'SIGTERM',
			killed: true,
		})
		expect(session.status).toBe('killed')
	})
})

describe('a guest never asked for a session', () => {
	it('creates no registry when sessions are only listed, read, attached to or killed', async () => {
		const replies: object[] = []
		const ctx = {
			config: { sessions: DEFAULT_SESSION_CONFIG, refusalFlushGraceMs: 10 },
			reply: (message: object) => replies.push(message),
			send: (message: object) => replies.push(message) > 0,
			endStream: () => undefined,
			onFrame: () => undefined,
			onClose: () => undefined,
			closed: false,
		} as unknown as OpContext
		expect(existingSessionRegistry()).toBeUndefined()
		await listSessions({}, ctx)
		expect(replies).toEqual([{ ok: true, sessions: [] }])
		await expect(async () => killSession({ sessionId: 'x' }, ctx)).rejects.toThrow(
			'unknown_session',
		)
		expect(() => attachSession({ sessionId: 'x' }, ctx)).toThrow('unknown_session')
		expect(() => attachSession({ sessionId: 'x', follow: false }, ctx)).toThrow('unknown_session')
		expect(existingSessionRegistry()).toBeUndefined()
	})
})
