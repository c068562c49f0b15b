/**
 * The session room's own finding: an attachment ended while the program kept running (the offset
 * to come back at). A guest refusal of a session verb is `SessionRefusedError`
 * (`../refusals/refusal-errors.ts`); a guest without `sessions` is `SessionsUnsupportedError`
 * (`../refusals/guest-feature-errors.ts`) — never a silent downgrade to a connection-bound
 * terminal. Messages carry ids and codes, never input or output.
 */
import { SandboxError } from '../../contract/errors.js'

/**
 * Why a session terminal's attachment ended while its program kept running. The guest's `detached`
 * event says `superseded` or `slow_reader`; the host names the second `slow-reader`.
 */
export type SessionDetachReason = 'connection-lost' | 'superseded' | 'slow-reader' | 'closed'

/**
 * A session terminal's `exited` when the attachment ended but the program did not: resolving would
 * report an exit that never happened. `nextOffset` is where `attachTerminal` should resume.
 */
export class AgentSessionDetachedError extends SandboxError<SessionDetachReason> {
	override readonly name = 'AgentSessionDetachedError'
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
