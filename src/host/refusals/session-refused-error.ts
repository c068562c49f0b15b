/**
 * The guest refused a session request. It names what the caller needs to act on:
 * the guest's code and, for a bad offset, where the session's output ends. Messages carry ids and
 * codes, never input or output.
 */
import { SandboxError } from '../../contract/errors.js'
import { AGENT_REFUSAL } from '../../wire/refusals.js'

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
			{ retryable: refusal === AGENT_REFUSAL.session_capacity },
		)
		this.refusal = refusal
		this.sessionId = sessionId
		this.operation = operation
		if (options.nextOffset !== undefined) this.nextOffset = options.nextOffset
	}
}
