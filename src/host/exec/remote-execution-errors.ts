/**
 * Failures of a remote execution as `RemoteExecutionController` reports them: a command the guest
 * refused, a cancellation nobody could confirm (the unit must be retired), and a confirmed
 * cancellation whose result never arrived. A peer that broke the protocol is the transport's
 * `RemoteProtocolError` (`../transport/transport-errors.ts`).
 */
import { SandboxError, type SandboxErrorOptions } from '../../contract/errors.js'
import type { SandboxRetirementObservation } from '../../contract/retirement.js'
import type { RemoteCancellationAcknowledgement } from './remote-execution-messages.js'

/** The guest reported an `error` for the command (bad cwd, spawn failure, invalid timeout, …). */
export class RemoteCommandError extends SandboxError {
	override readonly name = 'RemoteCommandError'
	/** The guest's error string. */
	readonly guestError: string

	constructor(guestError: string, options: SandboxErrorOptions = {}) {
		super(`the guest refused the command: ${guestError}`, 'command-error', options)
		this.guestError = guestError
	}
}

/** The guest refused to reserve an execution (e.g. `execution_capacity`). */
export class RemoteExecutionRefusedError extends SandboxError {
	override readonly name = 'RemoteExecutionRefusedError'
	readonly guestError: string

	constructor(guestError: string) {
		super(`the guest refused to reserve an execution: ${guestError}`, 'execution-refused', {
			retryable: guestError.startsWith('execution_capacity'),
		})
		this.guestError = guestError
	}
}

/** A reserve or cancel request got no answer within its bound. */
export class RemoteControlTimeoutError extends SandboxError {
	override readonly name = 'RemoteControlTimeoutError'
	readonly operation: string
	readonly timeoutMs: number

	constructor(operation: string, timeoutMs: number, options: SandboxErrorOptions = {}) {
		super(`${operation} got no answer within ${timeoutMs} ms`, 'control-timeout', {
			...options,
			retryable: true,
		})
		this.operation = operation
		this.timeoutMs = timeoutMs
	}
}

/**
 * Whether the command still runs is unknown: no cancellation could be confirmed inside the window.
 * The backend retires the whole unit and records what happened in `retirement`.
 */
export class RemoteCancellationUnknownError extends SandboxError {
	override readonly name = 'RemoteCancellationUnknownError'
	/** Absent when the guest refused before an execution was reserved (`agent_retiring`). */
	readonly executionId?: string
	/** Set by the sandbox once it retired (or tried to retire) the unit. */
	retirement?: SandboxRetirementObservation

	constructor(executionId: string | undefined, detail: string, options: SandboxErrorOptions = {}) {
		const subject = executionId === undefined ? 'the guest' : `execution ${executionId}`
		super(
			`${subject}: ${detail}; outcome unknown; do not retry automatically`,
			'cancellation-unknown',
			{ ...options, retryable: false },
		)
		if (executionId !== undefined) this.executionId = executionId
	}
}

/** The cancellation was confirmed after the command started, but its result never arrived. */
export class RemoteResultIncompleteError extends SandboxError {
	override readonly name = 'RemoteResultIncompleteError'
	readonly acknowledgement: RemoteCancellationAcknowledgement

	constructor(
		message: string,
		acknowledgement: RemoteCancellationAcknowledgement,
		options: SandboxErrorOptions = {},
	) {
		super(message, 'result-incomplete', options)
		this.acknowledgement = acknowledgement
	}
}
