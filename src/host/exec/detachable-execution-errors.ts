/**
 * Failures of detachable executions named here without the workspace's `Kubernetes` prefix: the
 * host stopped watching a command that may still run, or the guest is too old to retain output.
 * The guest's refusals of an attach or a cancel by id are in `../refusals/`.
 */
import { SandboxError, type SandboxErrorOptions } from '../../contract/errors.js'

/** Why the host stopped watching: its reattach window ran out, or the caller detached. */
export type ExecutionDetachReason = 'reattach-window-elapsed' | 'detached'

/**
 * The host is no longer watching `executionId`; the command may still be running in the guest.
 * `attachExecution(executionId, { fromOffset: outputOffset })` picks it up where this left off.
 */
export class ExecutionDetachedError extends SandboxError {
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

/** The guest does not advertise `execution-attach`; refused before anything was admitted. */
export class ExecutionAttachUnsupportedError extends SandboxError {
	override readonly name = 'ExecutionAttachUnsupportedError'
	readonly operation: string

	constructor(operation: string) {
		super(
			`${operation}: the guest agent does not advertise execution-attach; redeploy the guest image from this release`,
			'execution-attach-unsupported',
		)
		this.operation = operation
	}
}
