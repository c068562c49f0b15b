/**
 * What a guest's answer about an execution becomes: a command the guest refused, a reservation it
 * refused, a cancellation nobody could confirm (the unit must be retired), and the refusals of the
 * by-id verbs (attach, cancel). The execution room's own failures (a control request that timed
 * out, a result that never arrived, a watch that detached) are in `../exec/`.
 */
import { SandboxError, type SandboxErrorOptions } from '../../contract/errors.js'
import type { SandboxRetirementObservation } from '../../contract/retirement.js'
import type { ExecutionState } from '../../wire/protocol.js'
import { AGENT_REFUSAL, type AgentRefusalCode, parseRefusal } from '../../wire/refusals.js'

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
			retryable: parseRefusal(guestError).known === AGENT_REFUSAL.execution_capacity,
		})
		this.guestError = guestError
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

/** The guest's refusal of an attach (`attach-execution` error strings). */
export type AttachRefusal =
	| Extract<
			AgentRefusalCode,
			| 'invalid_execution_id'
			| 'unknown_execution'
			| 'output_not_retained'
			| 'invalid_offset'
			| 'agent_retiring'
	  >
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
