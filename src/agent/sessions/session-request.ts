/**
 * Validation of the session ops' request bodies (pure): which `terminal` bodies ask for a
 * persistent session, and the bodies of `start-detached`, `attach-session` and `kill-session`.
 * Every failure is an `OpRefusal` with the session ops' stable code.
 */

import { AGENT_REFUSAL } from '../../wire/refusals.js'
import { isSessionId, type SessionSignal, sessionSignal } from '../../wire/sessions.js'
import { OpRefusal } from '../handler/op-refusal.js'
import {
	isIntegerIn,
	isStringArray,
	isStringRecord,
	NON_NEGATIVE_INTEGER,
} from '../handler/value-checks.js'
import { parseTerminalSize, type TerminalSize } from '../process/terminal-request.js'

function sessionIdOf(body: Record<string, unknown>): string {
	if (!isSessionId(body.sessionId)) throw new OpRefusal(AGENT_REFUSAL.invalid_session_id)
	return body.sessionId
}

/**
 * The session id of a persistent `terminal` request, or undefined for a plain one. The two fields
 * travel together: `persistent` without a valid id, or an id without `persistent: true`, is refused
 * rather than served as a connection-bound terminal.
 */
export function parsePersistentTerminal(body: Record<string, unknown>): string | undefined {
	if (body.sessionId === undefined && body.persistent === undefined) return undefined
	const sessionId = sessionIdOf(body)
	if (body.persistent !== true) {
		throw new OpRefusal(
			AGENT_REFUSAL.invalid_session_request,
			'sessionId requires persistent: true',
		)
	}
	return sessionId
}

export interface StartDetachedSpec {
	readonly sessionId: string
	readonly command: string
	readonly args: readonly string[]
	readonly cwd?: string
	readonly env?: Readonly<Record<string, string>>
}

export function parseStartDetached(body: Record<string, unknown>): StartDetachedSpec {
	const sessionId = sessionIdOf(body)
	const { command, args, cwd, env } = body
	if (typeof command !== 'string' || command === '')
		throw new OpRefusal(AGENT_REFUSAL.missing_command)
	if (args !== undefined && !isStringArray(args)) throw new OpRefusal(AGENT_REFUSAL.invalid_args)
	if (env !== undefined && !isStringRecord(env)) throw new OpRefusal(AGENT_REFUSAL.invalid_env)
	if (cwd !== undefined && typeof cwd !== 'string') throw new OpRefusal(AGENT_REFUSAL.invalid_cwd)
	return {
		sessionId,
		command,
		args: args ?? [],
		...(cwd === undefined ? {} : { cwd }),
		...(env === undefined ? {} : { env }),
	}
}

export interface AttachSessionSpec {
	readonly sessionId: string
	readonly fromOffset?: number
	readonly follow: boolean
	readonly size?: TerminalSize
}

export function parseAttachSession(body: Record<string, unknown>): AttachSessionSpec {
	const sessionId = sessionIdOf(body)
	const { fromOffset, follow } = body
	if (fromOffset !== undefined && !isIntegerIn(fromOffset, NON_NEGATIVE_INTEGER)) {
		throw new OpRefusal(AGENT_REFUSAL.invalid_offset)
	}
	if (follow !== undefined && typeof follow !== 'boolean')
		throw new OpRefusal(AGENT_REFUSAL.invalid_follow)
	const size =
		body.cols === undefined && body.rows === undefined ? undefined : parseTerminalSize(body)
	// `heartbeatMs` is accepted and ignored here; stream heartbeats are negotiated elsewhere.
	return {
		sessionId,
		...(fromOffset === undefined ? {} : { fromOffset }),
		follow: follow ?? true,
		...(size === undefined ? {} : { size }),
	}
}

export interface KillSessionSpec {
	readonly sessionId: string
	readonly signal: SessionSignal
}

/** Default `SIGKILL`; a signal outside the allow-list is coerced to `SIGTERM`. */
export function parseKillSession(body: Record<string, unknown>): KillSessionSpec {
	const sessionId = sessionIdOf(body)
	return { sessionId, signal: body.signal === undefined ? 'SIGKILL' : sessionSignal(body.signal) }
}
