/**
 * Refusals of detachable executions (named here without the Kubernetes workspace's
 * `Kubernetes` prefix): the host stopped watching a command that may still run, the guest would not
 * let it attach, the guest is too old to retain output, or it refused a cancel by id.
 */
import { SandboxError, type SandboxErrorOptions } from '../../contract/errors.js'
import type { ExecutionState } from '../../wire/protocol.js'

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

/** The guest's refusal of an attach (`attach-execution` error strings). */
export type AttachRefusal =
	| 'invalid_execution_id'
	| 'unknown_execution'
	| 'output_not_retained'
	| 'invalid_offset'
	| 'agent_retiring'
	| (string & { readonly __otherRefusal?: never })

/**
 * The guest would not attach to `executionId`. `executionState`, when the guest reported one, says
 * where the execution is: `'reserved'` means the command never started, so nothing is running.
 */
export class ExecutionNotAttachableError extends SandboxError {
	override readonly name = 'ExecutionNotAttachableError'
	readonly executionId: string
	readonly refusal: AttachRefusal
	readonly executionState?: ExecutionState

	constructor(executionId: string, refusal: AttachRefusal, executionState?: ExecutionState) {
		const state = executionState === undefined ? '' : ` (execution state: ${executionState})`
		super(
			`cannot attach to execution ${executionId}: ${refusal}${state}`,
			'execution-not-attachable',
		)
		this.executionId = executionId
		this.refusal = refusal
		if (executionState !== undefined) this.executionState = executionState
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

/** `cancelExecution` of an id the guest does not hold (or a malformed one). */
export class ExecutionCancelRefusedError extends SandboxError {
	override readonly name = 'ExecutionCancelRefusedError'
	readonly executionId: string
	/** The guest's refusal, e.g. `unknown_execution`. */
	readonly refusal: string

	constructor(executionId: string, refusal: string) {
		super(`cancel of execution ${executionId} refused: ${refusal}`, 'execution-cancel-refused')
		this.executionId = executionId
		this.refusal = refusal
	}
}
