/**
 * Failures of the session verbs that are not a guest refusal (those are `SessionRefusedError`,
 * `../refusals/session-refused-error.ts`): the guest lacks the feature (rebuild the image — never a
 * silent downgrade to a connection-bound terminal), or an attachment ended while the program kept
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
