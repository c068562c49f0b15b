/**
 * Failures of a remote execution that are the host's own findings: a control request that got no
 * answer in time, and a confirmed cancellation whose result never arrived. What a guest's answer
 * becomes (a refused command, an unconfirmable cancellation, a broken protocol) is in
 * `../refusals/`.
 */
import { SandboxError, type SandboxErrorOptions } from '../../contract/errors.js'
import type { RemoteCancellationAcknowledgement } from './remote-execution-messages.js'

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
