/**
 * Long commands as guest sessions: `exec_start` hands the command to the guest's session
 * registry, so it runs whether or not anyone watches; `exec_read` reads its output from a cursor
 * (a byte offset the guest keeps), so a client that lost its connection — or a different client —
 * resumes where it stopped; `exec_write_stdin` writes to a command started with `tty`;
 * `exec_signal` signals its whole kernel session. The exec id is the session id: nothing but a
 * command's timer and the one attachment a tty command's input goes through is held here.
 */
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type {
	AttachTerminalOptions,
	BackgroundJobOutput,
	KilledSession,
	KillSessionOptions,
	ListSessionsOptions,
	PersistentTerminalOptions,
	ReadSessionOptions,
	Sandbox,
	SessionSummary,
	SessionTerminal,
	StartDetachedOptions,
	StartedSession,
} from '../contract-entry.js'
import { commandOf, defineTool } from './define-tool.js'
import { sliceRead } from './exec-cursor.js'
import {
	booleanArgument,
	integerArgument,
	optionalIntegerArgument,
	stringArgument,
	stringMapArgument,
} from './tool-arguments.js'
import { ExecStdinUnavailableError, ToolUnsupportedError } from './tool-errors.js'
import { COMMAND_PROPERTIES, MAX_TOOL_TIMEOUT_MS } from './tool-schema-parts.js'
import type { ToolArguments } from './tool-types.js'

/** The session verbs a sandbox must serve for the long-command tools (the local tier does). */
export interface SessionVerbs {
	/** Starts a program with stdin closed under a session id. */
	startDetached(options: StartDetachedOptions): Promise<StartedSession>
	/** Starts a program on a PTY as a persistent session. */
	openTerminal(options: PersistentTerminalOptions): Promise<SessionTerminal>
	/** Attaches to a session to write to it. */
	attachTerminal(sessionId: string, options?: AttachTerminalOptions): Promise<SessionTerminal>
	/** Reads a session's output from an offset without attaching. */
	readSession(sessionId: string, options?: ReadSessionOptions): Promise<BackgroundJobOutput>
	/** The guest's sessions. */
	listSessions(options?: ListSessionsOptions): Promise<readonly SessionSummary[]>
	/** Signals a session's whole kernel session. */
	killSession(sessionId: string, options?: KillSessionOptions): Promise<KilledSession>
}

/** Whether `sandbox` serves every verb the long-command tools use. */
export function hasSessionVerbs(sandbox: Sandbox): sandbox is Sandbox & SessionVerbs {
	const verbs = sandbox as Sandbox & Partial<SessionVerbs>
	return (
		typeof verbs.startDetached === 'function' &&
		typeof verbs.attachTerminal === 'function' &&
		typeof verbs.readSession === 'function' &&
		typeof verbs.listSessions === 'function' &&
		typeof verbs.killSession === 'function' &&
		typeof verbs.openTerminal === 'function'
	)
}

export const DEFAULT_READ_MAX_BYTES = 65_536
export const MAX_READ_WAIT_MS = 60_000
/** How often a waiting `exec_read` asks the guest again. */
const READ_POLL_MS = 100
const TTY_SIZE = { cols: 160, rows: 48 } as const
const EXEC_ID_PATTERN = '^exec-[A-Za-z0-9-]{1,59}$'

const EXEC_ID_SCHEMA = {
	type: 'string',
	pattern: EXEC_ID_PATTERN,
	description: 'The exec_id exec_start answered.',
} as const

function execIdOf(args: ToolArguments): string {
	return stringArgument(args, 'exec_id') ?? ''
}

const ANNOTATIONS = {
	readOnlyHint: false,
	destructiveHint: true,
	idempotentHint: false,
	openWorldHint: true,
} as const

/** The sandbox's session verbs, or `ToolUnsupportedError` naming the tool. */
function sessionVerbs(sandbox: Sandbox, tool: string): SessionVerbs {
	if (!hasSessionVerbs(sandbox))
		throw new ToolUnsupportedError(tool, 'sessions (long-running commands)')
	return sandbox
}

export const EXEC_START_TOOL = defineTool({
	name: 'exec_start',
	description:
		'Start a long-running command and return at once with an exec_id. Read its output with exec_read (resumable from a cursor), write to it with exec_write_stdin (only when started with tty: true), signal it with exec_signal.',
	inputSchema: {
		type: 'object',
		properties: {
			...COMMAND_PROPERTIES,
			tty: {
				type: 'boolean',
				description:
					'Run it on a terminal so exec_write_stdin can type into it (output then includes the echo). Default false: stdin is closed.',
			},
			timeout_ms: {
				type: 'integer',
				minimum: 1,
				maximum: MAX_TOOL_TIMEOUT_MS,
				description: 'Kill the command (SIGKILL) after this many milliseconds. Default: no limit.',
			},
		},
		additionalProperties: false,
	},
	annotations: { title: 'Start a long-running command', ...ANNOTATIONS },
	handler: async ({ sandbox, background }, args, context) => {
		const verbs = sessionVerbs(sandbox, 'exec_start')
		const { command, args: argv } = commandOf('exec_start', args)
		const cwd = stringArgument(args, 'cwd')
		const env = stringMapArgument(args, 'env')
		const execId = `exec-${randomUUID()}`
		const common = {
			command,
			args: argv,
			...(cwd === undefined ? {} : { cwd }),
			...(env === undefined ? {} : { env }),
			...(context.signal ? { signal: context.signal } : {}),
		}
		const tty = booleanArgument(args, 'tty', false)
		if (tty) {
			const terminal = await verbs.openTerminal({
				...common,
				sessionId: execId,
				persistent: true,
				size: TTY_SIZE,
			})
			background.holdInput(execId, terminal)
		} else {
			await verbs.startDetached({ ...common, sessionId: execId })
		}
		const timeoutMs = optionalIntegerArgument(args, 'timeout_ms')
		if (timeoutMs !== undefined) {
			background.armTimeout(execId, timeoutMs, () =>
				verbs.killSession(execId, { signal: 'SIGKILL' }),
			)
		}
		return {
			text: `started ${execId}; read its output with exec_read from cursor 0`,
			data: { exec_id: execId, cursor: 0, tty },
		}
	},
})
export const EXEC_READ_TOOL = defineTool({
	name: 'exec_read',
	description:
		'Read output of a command exec_start started, from a cursor (0 = the beginning). Returns the output, the cursor to pass next time, and the status (running, exited, killed). With wait_ms it waits up to that long for new output.',
	inputSchema: {
		type: 'object',
		properties: {
			exec_id: EXEC_ID_SCHEMA,
			cursor: {
				type: 'integer',
				minimum: 0,
				maximum: Number.MAX_SAFE_INTEGER,
				description: 'Byte offset to read from: 0, or the cursor the last exec_read returned.',
			},
			max_bytes: {
				type: 'integer',
				minimum: 1,
				maximum: 1_048_576,
				description: `Most bytes of output returned (default ${DEFAULT_READ_MAX_BYTES}).`,
			},
			wait_ms: {
				type: 'integer',
				minimum: 0,
				maximum: MAX_READ_WAIT_MS,
				description: 'Wait up to this long for output past the cursor, or the end (default 0).',
			},
		},
		required: ['exec_id'],
		additionalProperties: false,
	},
	annotations: {
		title: 'Read a command’s output',
		readOnlyHint: true,
		destructiveHint: false,
		idempotentHint: true,
		openWorldHint: false,
	},
	handler: async ({ sandbox }, args, context) => {
		const verbs = sessionVerbs(sandbox, 'exec_read')
		const execId = execIdOf(args)
		const cursor = integerArgument(args, 'cursor', 0)
		const maxBytes = integerArgument(args, 'max_bytes', DEFAULT_READ_MAX_BYTES)
		const deadline = Date.now() + integerArgument(args, 'wait_ms', 0)
		const signal = context.signal
		let output = await verbs.readSession(execId, {
			fromOffset: cursor,
			...(signal ? { signal } : {}),
		})
		while (output.status === 'running' && output.nextOffset <= cursor && Date.now() < deadline) {
			await sleep(
				Math.min(READ_POLL_MS, Math.max(1, deadline - Date.now())),
				undefined,
				signal ? { signal } : {},
			)
			output = await verbs.readSession(execId, {
				fromOffset: cursor,
				...(signal ? { signal } : {}),
			})
		}
		const slice = sliceRead({ cursor, ...output }, maxBytes)
		const done = output.status !== 'running' && slice.remainingBytes === 0
		const data = {
			exec_id: execId,
			output: slice.output,
			cursor: slice.cursor,
			status: output.status,
			...(output.exitCode === undefined ? {} : { exit_code: output.exitCode }),
			more: slice.remainingBytes > 0,
			remaining_bytes: slice.remainingBytes,
			dropped_bytes: slice.droppedBytes,
			skipped_bytes: slice.skippedBytes,
			done,
		}
		const lost =
			slice.droppedBytes > 0
				? `[${slice.droppedBytes} bytes before this were no longer held]\n`
				: ''
		const status = done
			? `${output.status}${output.exitCode === undefined ? '' : ` with exit code ${output.exitCode}`}`
			: `${output.status}; continue from cursor ${slice.cursor}`
		return { text: `${lost}${slice.output}\n[${status}]`, data }
	},
})
export const EXEC_WRITE_STDIN_TOOL = defineTool({
	name: 'exec_write_stdin',
	description:
		'Type into a command exec_start started with tty: true (include "\\n" to press Enter; "\\u0003" is Ctrl-C, "\\u0004" Ctrl-D).',
	inputSchema: {
		type: 'object',
		properties: {
			exec_id: EXEC_ID_SCHEMA,
			data: { type: 'string', minLength: 1, maxLength: 65_536, description: 'Text to write.' },
		},
		required: ['exec_id', 'data'],
		additionalProperties: false,
	},
	annotations: { title: 'Write to a command’s input', ...ANNOTATIONS },
	handler: async ({ sandbox, background }, args, context) => {
		const verbs = sessionVerbs(sandbox, 'exec_write_stdin')
		const execId = execIdOf(args)
		const data = stringArgument(args, 'data') ?? ''
		let terminal = background.input(execId)
		if (!terminal) {
			const signal = context.signal
			const session = (await verbs.listSessions(signal ? { signal } : {})).find(
				(entry) => entry.sessionId === execId,
			)
			// An unknown id is the guest's own refusal, named by readSession.
			if (!session) await verbs.readSession(execId, signal ? { signal } : {})
			if (session?.kind !== 'terminal') throw new ExecStdinUnavailableError(execId)
			terminal = await verbs.attachTerminal(execId, {
				fromOffset: session.nextOffset,
				...(signal ? { signal } : {}),
			})
			background.holdInput(execId, terminal)
		}
		terminal.write(data)
		const bytes = Buffer.byteLength(data)
		return { text: `wrote ${bytes} bytes to ${execId}`, data: { exec_id: execId, bytes } }
	},
})
export const EXEC_SIGNAL_TOOL = defineTool({
	name: 'exec_signal',
	description:
		'Send a signal to a command exec_start started and everything it started (default SIGTERM; SIGKILL always ends it).',
	inputSchema: {
		type: 'object',
		properties: {
			exec_id: EXEC_ID_SCHEMA,
			signal: {
				type: 'string',
				enum: ['SIGTERM', 'SIGKILL', 'SIGINT', 'SIGHUP'],
				description:
					'The signal sent (default SIGTERM: asks it to stop; SIGKILL ends it at once; SIGINT is Ctrl-C).',
			},
		},
		required: ['exec_id'],
		additionalProperties: false,
	},
	annotations: { title: 'Signal a command', ...ANNOTATIONS, idempotentHint: true },
	handler: async ({ sandbox }, args, context) => {
		const verbs = sessionVerbs(sandbox, 'exec_signal')
		const execId = execIdOf(args)
		const signal = stringArgument(args, 'signal') ?? 'SIGTERM'
		const killed = await verbs.killSession(execId, {
			signal,
			...(context.signal ? { abortSignal: context.signal } : {}),
		})
		const data = {
			exec_id: execId,
			signal,
			state: killed.state,
			...(killed.exitCode === undefined ? {} : { exit_code: killed.exitCode }),
		}
		return { text: `sent ${signal} to ${execId}; it is ${killed.state}`, data }
	},
})
export const BACKGROUND_EXEC_TOOLS = [
	EXEC_START_TOOL,
	EXEC_READ_TOOL,
	EXEC_WRITE_STDIN_TOOL,
	EXEC_SIGNAL_TOOL,
]
