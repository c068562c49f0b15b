/**
 * The session ops of the guest-agent wire: persistent terminals
 * (`terminal` with `sessionId` + `persistent: true`), `start-detached`, `attach-session`,
 * `list-sessions` and `kill-session`. All additive: the protocol version is unchanged and a guest
 * serving them advertises `sessions` in `healthz`. Offsets are bytes in the session's one
 * monotonic output space; `droppedBytes` is what the ring evicted before the reader got it.
 */
import type { AgentRefusalCode } from './refusals.js'

/** A session's program: on a PTY (`terminal`) or with stdin closed (`detached`). */
export type SessionKind = 'terminal' | 'detached'
/** Whether a session's program still runs. */
export type SessionState = 'running' | 'exited'
/** Why an attachment ended while the program kept running, as the guest names it. */
export type WireSessionDetachReason = 'superseded' | 'slow_reader'

/** Session id: 1–64 characters, the first alphanumeric, then `[A-Za-z0-9._-]`. */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/

/** Signals a session may be sent; anything else is coerced to `SIGTERM`. */
export const SESSION_SIGNALS = ['SIGTERM', 'SIGKILL', 'SIGINT', 'SIGHUP'] as const
export type SessionSignal = (typeof SESSION_SIGNALS)[number]

/** A session as the guest reports it: command, offsets, state, attachment. */
export interface SessionSummaryWire {
	readonly sessionId: string
	readonly kind: SessionKind
	readonly command: string
	readonly args: readonly string[]
	/** Epoch milliseconds. */
	readonly startedAt: number
	readonly lastInputAt?: number
	readonly lastOutputAt?: number
	/** Offset the next byte of output gets (= bytes ever written). */
	readonly nextOffset: number
	/** Bytes the ring has evicted since the start. */
	readonly droppedBytes: number
	readonly state: SessionState
	/** Whether a connection is attached right now. */
	readonly attached: boolean
	readonly exitCode?: number
	/** Name of the signal that ended the program, when one did. */
	readonly signal?: string
	/** Present (true) once a `kill-session` was asked for before the program exited. */
	readonly killed?: boolean
	/**
	 * Present (true) when `command` / `args` were cut to `SESSION_SUMMARY_ECHO_BYTES`: a summary
	 * echoes the command line for recognition, never unbounded.
	 */
	readonly commandLineTruncated?: true
}

/**
 * The most of a session's command line (its `command` and `args`, in UTF-16 units) a summary
 * echoes, so a listing is bounded by the session count alone (wire/reply-bounds.ts).
 */
export const SESSION_SUMMARY_ECHO_BYTES = 4096

/** `command` and `args` as a summary echoes them: whole, or cut to the bound and marked. */
export function summaryCommandLine(
	command: string,
	args: readonly string[],
): Pick<SessionSummaryWire, 'command' | 'args' | 'commandLineTruncated'> {
	let room = SESSION_SUMMARY_ECHO_BYTES - command.length
	if (room < 0) {
		return {
			command: command.slice(0, SESSION_SUMMARY_ECHO_BYTES),
			args: [],
			commandLineTruncated: true,
		}
	}
	const kept: string[] = []
	for (const arg of args) {
		if (arg.length > room) {
			if (room > 0) kept.push(arg.slice(0, room))
			return { command, args: kept, commandLineTruncated: true }
		}
		kept.push(arg)
		room -= arg.length
	}
	return { command, args: kept }
}

/** Additive fields of a `terminal` request that make it a persistent session. */
export interface PersistentTerminalFields {
	readonly sessionId: string
	readonly persistent: true
}

export interface StartDetachedRequest {
	readonly sessionId: string
	readonly command: string
	readonly args?: readonly string[]
	readonly cwd?: string
	readonly env?: Readonly<Record<string, string>>
}

export type StartDetachedReply = { readonly ok: true; readonly pid: number } & SessionSummaryWire

export interface AttachSessionRequest {
	readonly sessionId: string
	/** Default: the oldest byte still held. */
	readonly fromOffset?: number
	/** Default true; false answers one `output` event (a read, not an attachment). */
	readonly follow?: boolean
	readonly cols?: number
	readonly rows?: number
	/** Accepted and ignored until stream heartbeats cover sessions. */
	readonly heartbeatMs?: number
}

/** `ready` of a persistent terminal or an `attach-session`: the session's state and the replay start. */
export type SessionReadyEvent = {
	readonly type: 'ready'
	readonly fromOffset: number
	readonly droppedBytes: number
} & Pick<SessionSummaryWire, 'sessionId' | 'kind' | 'state' | 'exitCode' | 'signal' | 'nextOffset'>

export type SessionServerEvent =
	| SessionReadyEvent
	| {
			readonly type: 'data'
			readonly data: string
			readonly stream: 'stdout' | 'stderr'
			readonly offset: number
			readonly nextOffset: number
	  }
	| {
			readonly type: 'exit'
			readonly exitCode: number
			readonly signal?: number
			readonly nextOffset: number
	  }
	| {
			readonly type: 'detached'
			readonly reason: WireSessionDetachReason
			readonly nextOffset: number
	  }
	| { readonly type: 'error'; readonly error: string; readonly nextOffset?: number }

/** The one event of `attach-session` with `follow: false`, in the BackgroundJobOutput shape. */
export interface SessionOutputEvent {
	readonly type: 'output'
	readonly sessionId: string
	readonly chunk: string
	readonly fromOffset: number
	readonly nextOffset: number
	readonly droppedBytes: number
	readonly status: 'running' | 'exited' | 'killed'
	readonly exitCode?: number
	readonly signal?: string
}

export interface ListSessionsReply {
	readonly ok: true
	readonly sessions: readonly SessionSummaryWire[]
}

export interface KillSessionRequest {
	readonly sessionId: string
	/** Default `SIGKILL`; outside the allow-list ⇒ `SIGTERM`. */
	readonly signal?: string
}

export type KillSessionReply = {
	readonly ok: true
	readonly signalled: number
} & SessionSummaryWire

/** Refusal codes of the session ops (defined with every other code in refusals.ts). */
export type SessionRefusalCode = Extract<
	AgentRefusalCode,
	| 'invalid_session_id'
	| 'invalid_session_request'
	| 'session_exists'
	| 'unknown_session'
	| 'session_capacity'
	| 'invalid_offset'
	| 'invalid_follow'
	| 'missing_command'
	| 'invalid_args'
	| 'invalid_env'
	| 'invalid_cwd'
	| 'spawn_failed'
>

/** The allow-listed signal named, else `SIGTERM`. */
export function sessionSignal(value: unknown): SessionSignal {
	return SESSION_SIGNALS.find((signal) => signal === value) ?? 'SIGTERM'
}

export function isSessionId(value: unknown): value is string {
	return typeof value === 'string' && SESSION_ID_PATTERN.test(value)
}
