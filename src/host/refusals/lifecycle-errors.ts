/**
 * Refusals of the host's `quiesce()` and `flush()` (`../lifecycle/agent-lifecycle-ops.ts`). The guest lacking an
 * op is refused before dialing, by feature, so an old image is never read as "nothing to stop" or
 * "nothing to flush"; an answer that could not be confirmed carries what the guest said.
 */
import { SandboxError } from '../../contract/errors.js'

/** The guest does not advertise `quiesce`: its agent predates the op. */
export class QuiesceUnsupportedError extends SandboxError {
	override readonly name = 'QuiesceUnsupportedError'

	constructor() {
		super(
			"quiesce refused: the guest agent does not advertise 'quiesce'; rebuild the guest image from this release",
			'quiesce-unsupported',
		)
	}
}

/** A process survived SIGKILL, or the guest ran out of rounds or time; `pid` names it. */
export class QuiesceUnconfirmedError extends SandboxError {
	override readonly name = 'QuiesceUnconfirmedError'
	/** The process the guest could not confirm gone; undefined when the guest named none. */
	readonly pid: number | undefined
	/** The guest's own explanation. */
	readonly guestMessage: string

	constructor(pid: number | undefined, guestMessage: string) {
		super(`quiesce could not be confirmed: ${guestMessage}`, 'quiesce_unconfirmed')
		this.pid = pid
		this.guestMessage = guestMessage
	}
}

/** The guest cannot flush: it does not advertise `flush`, or answered `flush_unsupported`. */
export class FlushUnsupportedError extends SandboxError {
	override readonly name = 'FlushUnsupportedError'

	constructor(detail: string) {
		super(`flush refused: ${detail}`, 'flush-unsupported')
	}
}

/** The guest ran the flush but could not confirm it (timeout, non-zero exit). */
export class FlushUnconfirmedError extends SandboxError {
	override readonly name = 'FlushUnconfirmedError'
	readonly guestMessage: string

	constructor(guestMessage: string) {
		super(`flush could not be confirmed: ${guestMessage}`, 'flush_unconfirmed', { retryable: true })
		this.guestMessage = guestMessage
	}
}
