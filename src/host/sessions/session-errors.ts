/**
 * Refusals of the session verbs. Each names what the caller needs to act on:
 * the guest lacks the feature (rebuild the image — never a silent downgrade to a connection-bound
 * terminal), the guest refused the request by code, or an attachment ended while the program kept
 * running (the offset to come back at). Messages carry ids and codes, never input or output.
 */
import { SandboxError } from '../../contract/errors.js'

/** Why a session terminal's attachment ended while its program kept running. */
export type SessionDetachReason = 'connection-lost' | 'superseded' | 'slow_reader' | 'closed'

/** A session verb against a guest whose `healthz` does not advertise `sessions`. Nothing was sent. */
export class SessionsUnsupportedError extends SandboxError {
	override readonly name = 'SessionsUnsupportedError'
	readonly operation: string

	constructor(operation: string) {
		super(
			`${operation}: the guest agent does not advertise 'sessions'; redeploy the guest image to get persistent terminals and detached programs`,
			'sessions-unsupported',
		)
		this.operation = operation
	}
}

/** The guest refused a session request; `refusal` is its code (`session_capacity`, …). */
export class SessionRefusedError extends SandboxError {
	override readonly name = 'SessionRefusedError'
	readonly refusal: string
	readonly sessionId: string
	readonly operation: string
	/** With `invalid_offset`: where the session's output currently ends. */
	readonly nextOffset?: number

	constructor(
		operation: string,
		sessionId: string,
		refusal: string,
		options: { readonly nextOffset?: number; readonly detail?: string } = {},
	) {
		const detail = options.detail === undefined ? '' : ` (${options.detail})`
		super(
			`${operation}: the guest refused session ${JSON.stringify(sessionId)}: ${refusal}${detail}`,
			'session-refused',
			{ retryable: refusal === 'session_capacity' },
		)
		this.refusal = refusal
		this.sessionId = sessionId
		this.operation = operation
		if (options.nextOffset !== undefined) this.nextOffset = options.nextOffset
	}
}

/**
 * A session terminal's `exited` when the attachment ended but the program did not: resolving would
 * report an exit that never happened. `nextOffset` is where `attachTerminal` should resume.
 */
export class AgentSessionDetachedError extends SandboxError {
	override readonly name = 'AgentSessionDetachedError'
	declare readonly reason: SessionDetachReason
	readonly sessionId: string
	readonly nextOffset: number

	constructor(sessionId: string, reason: SessionDetachReason, nextOffset: number) {
		super(
			`session ${JSON.stringify(sessionId)} detached (${reason}) while its program kept running; resume at offset ${nextOffset}`,
			reason,
			{ retryable: reason === 'connection-lost' },
		)
		this.sessionId = sessionId
		this.nextOffset = nextOffset
	}
}
