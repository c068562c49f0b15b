/**
 * The execution room's own findings (a guest's refusals of an execution are in
 * `../refusals/refusal-errors.ts`): a control request that got no answer in time, a confirmed
 * cancellation whose result never arrived, and a detachable run the host stopped watching while the
 * command may still run.
 */
import { SandboxError, type SandboxErrorOptions } from '../../contract/errors.js'
import type { RemoteCancellationAcknowledgement } from './remote-execution-messages.js'

/** A reserve or cancel request got no answer within its bound. */
export class RemoteControlTimeoutError extends SandboxError<'control-timeout'> {
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
export class RemoteResultIncompleteError extends SandboxError<'result-incomplete'> {
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

/** Why the host stopped watching: its reattach window ran out, or the caller detached. */
export type ExecutionDetachReason = 'reattach-window-elapsed' | 'detached'

/**
 * The host is no longer watching `executionId`; the command may still be running in the guest.
 * `attachExecution(executionId, { fromOffset: outputOffset })` picks it up where this left off.
 */
export class ExecutionDetachedError extends SandboxError<'execution-detached'> {
	override readonly name = 'ExecutionDetachedError'
	readonly executionId: string
	/** The offset after the last output byte received: where an attach resumes. */
	readonly outputOffset: number
	readonly detachReason: ExecutionDetachReason

	constructor(
		executionId: string,
		outputOffset: number,
		detachReason: ExecutionDetachReason,
		options: SandboxErrorOptions = {},
	) {
		const why =
			detachReason === 'detached'
				? 'the caller detached'
				: 'the connection was lost and no reattach succeeded within the reattach window'
		super(
			`execution ${executionId}: ${why}; the command may still be running (attach from offset ${outputOffset})`,
			'execution-detached',
			{ ...options, retryable: true },
		)
		this.executionId = executionId
		this.outputOffset = outputOffset
		this.detachReason = detachReason
	}
}
