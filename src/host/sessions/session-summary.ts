/**
 * The host's view of a guest session: the summary `listSessions()`,
 * `startDetached()` and `killSession()` answer, parsed strictly from the guest's reply (pure).
 * A malformed row is a `RemoteProtocolError`, never a guess.
 */
import type { BackgroundJobOutput } from '../../contract/background-job-output.js'
import { AGENT_OP } from '../../wire/protocol.js'
import type { SessionSummaryWire } from '../../wire/sessions.js'
import { RemoteByteCountError, RemoteProtocolError } from '../refusals/refusal-errors.js'

export type { SessionKind, SessionState } from '../../wire/sessions.js'

/** A session as the guest describes it (`list-sessions`, `kill-session`, `start-detached`). */
export type SessionSummary = SessionSummaryWire

/** `startDetached`'s answer: the summary plus the program's pid in the guest. */
export interface StartedSession extends SessionSummary {
	readonly pid: number
}

/** `killSession`'s answer: the summary (did it exit within the guest's wait?) plus the count. */
export interface KilledSession extends SessionSummary {
	readonly signalled: number
}

function fail(what: string): never {
	throw new RemoteProtocolError(`session summary: ${what}`)
}

function optionalNumber(raw: Record<string, unknown>, key: string): number | undefined {
	const value = raw[key]
	if (value === undefined) return undefined
	if (typeof value !== 'number' || !Number.isFinite(value)) fail(`${key} is not a number`)
	return value
}

function requiredNumber(raw: Record<string, unknown>, key: string): number {
	const value = optionalNumber(raw, key)
	if (value === undefined) fail(`${key} is missing`)
	return value
}

export function parseSessionSummary(raw: Record<string, unknown>): SessionSummary {
	const { sessionId, kind, command, args, state, attached, signal, killed } = raw
	if (typeof sessionId !== 'string') fail('sessionId is not a string')
	if (kind !== 'terminal' && kind !== 'detached') fail(`unknown kind ${String(kind)}`)
	if (typeof command !== 'string') fail('command is not a string')
	if (!Array.isArray(args) || !args.every((arg) => typeof arg === 'string')) {
		fail('args is not a string array')
	}
	if (state !== 'running' && state !== 'exited') fail(`unknown state ${String(state)}`)
	if (typeof attached !== 'boolean') fail('attached is not a boolean')
	if (signal !== undefined && typeof signal !== 'string') fail('signal is not a string')
	const lastInputAt = optionalNumber(raw, 'lastInputAt')
	const lastOutputAt = optionalNumber(raw, 'lastOutputAt')
	const exitCode = optionalNumber(raw, 'exitCode')
	return {
		sessionId,
		kind,
		command,
		args: [...(args as string[])],
		startedAt: requiredNumber(raw, 'startedAt'),
		...(lastInputAt === undefined ? {} : { lastInputAt }),
		...(lastOutputAt === undefined ? {} : { lastOutputAt }),
		nextOffset: requiredNumber(raw, 'nextOffset'),
		droppedBytes: requiredNumber(raw, 'droppedBytes'),
		state,
		attached,
		...(exitCode === undefined ? {} : { exitCode }),
		...(typeof signal === 'string' ? { signal } : {}),
		...(killed === true ? { killed: true } : {}),
		...(raw.commandLineTruncated === true ? { commandLineTruncated: true } : {}),
	}
}

/** The `output` event of a one-shot `attach-session` read as the SDK's `BackgroundJobOutput`. */
export function parseSessionOutput(raw: Record<string, unknown>): BackgroundJobOutput {
	const { chunk, status } = raw
	if (raw.type !== 'output') fail(`expected an output event, got ${String(raw.type)}`)
	if (typeof chunk !== 'string') fail('chunk is not a string')
	if (status !== 'running' && status !== 'exited' && status !== 'killed') {
		fail(`unknown status ${String(status)}`)
	}
	const exitCode = optionalNumber(raw, 'exitCode')
	const nextOffset = requiredNumber(raw, 'nextOffset')
	const fromOffset = optionalNumber(raw, 'fromOffset')
	// Every character the guest decodes costs at least one byte of the span it claims.
	if (fromOffset !== undefined && chunk.length > nextOffset - fromOffset) {
		throw new RemoteByteCountError(
			AGENT_OP.attachSession,
			'a chunk longer than the offsets it spans',
			Math.max(0, nextOffset - fromOffset),
			chunk.length,
		)
	}
	return {
		chunk,
		nextOffset,
		droppedBytes: requiredNumber(raw, 'droppedBytes'),
		status,
		...(exitCode === undefined ? {} : { exitCode }),
	}
}
