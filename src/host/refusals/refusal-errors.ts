/**
 * What a guest's answer becomes when it is not what the host asked for: a refusal (the generic
 * `AgentOpRefusedError`, `AgentUnauthorizedError`, and the per-verb classes `refusal-to-error.ts`
 * builds: a refused command or reservation, a cancellation nobody could confirm, a refused attach,
 * cancel by id or session request, a quiesce or flush the guest could not confirm) and a guest that
 * broke the protocol. The guest's own code always travels in a field of its own (`refusal`,
 * `guestError`, `guestCode`), never as `reason`. Messages carry ids, codes and counts, never input,
 * output or a token.
 */
import { SandboxError, type SandboxErrorOptions } from '../../contract/errors.js'
import type { SandboxRetirementObservation } from '../../contract/retirement.js'
import type { ExecutionState } from '../../wire/protocol.js'
import {
	AGENT_REFUSAL,
	type AgentRefusalCode,
	parseRefusal,
	type WireRefusal,
} from '../../wire/refusals.js'

/**
 * A transition refused because another is in flight: `reason` is `suspend-already-in-flight`; the
 * specification (R15-3162371-10) spells it in snake case, carried beside it as `specReason`.
 */
const SUSPEND_ALREADY_IN_FLIGHT = 'suspend_already_in_flight'

/** The guest answered an op with `{ ok: false, error }` (or a stream `error` event). */
export class AgentOpRefusedError extends SandboxError<'op-refused' | 'unauthorized'> {
	override readonly name: string = 'AgentOpRefusedError'
	readonly op: string
	/** The guest's error string, e.g. `ENOENT: …` or `unknown_op: …`. */
	readonly guestError: string
	/** The same answer read into its code, detail and fields. */
	readonly refusal: WireRefusal

	constructor(
		op: string,
		guestError: string,
		reason: 'op-refused' | 'unauthorized' = 'op-refused',
		refusal: WireRefusal = parseRefusal(guestError),
	) {
		super(`guest agent refused ${op}: ${guestError}`, reason)
		this.op = op
		this.guestError = guestError
		this.refusal = refusal
	}
}

/** The guest refused the request's credential (`unauthorized`). */
export class AgentUnauthorizedError extends AgentOpRefusedError {
	override readonly name = 'AgentUnauthorizedError'
	declare readonly reason: 'unauthorized'

	constructor(op: string) {
		super(op, 'unauthorized', 'unauthorized')
	}
}

/** A reservation, acknowledgement or stream the peer sent that breaks the protocol. */
export class RemoteProtocolError extends SandboxError<'protocol-error'> {
	override readonly name: string = 'RemoteProtocolError'

	constructor(message: string, options: SandboxErrorOptions = {}) {
		super(message, 'protocol-error', options)
	}
}

/** Which of an op's reply bounds a guest's frame broke (`wire/reply-bounds.ts`). */
export type ReplyBound = 'frame-bytes' | 'depth' | 'values' | 'parsed-bytes'

/**
 * A guest's frame past the host's bounds for its op: a header announcing more than the op's frame
 * ceiling, or JSON nested, wide or large past what the op can legitimately answer — refused before
 * the frame was buffered whole or parsed.
 */
export class RemoteReplyBoundError extends RemoteProtocolError {
	override readonly name = 'RemoteReplyBoundError'
	/** The wire op whose answer broke the bound. */
	readonly op: string
	readonly bound: ReplyBound
	/** The bound's value: bytes, levels or values. */
	readonly limit: number

	constructor(op: string, bound: ReplyBound, limit: number, detail: string, cause?: unknown) {
		super(
			`${op}: the guest's answer is past the host's bound and was refused unread: ${detail}`,
			cause === undefined ? {} : { cause },
		)
		this.op = op
		this.bound = bound
		this.limit = limit
	}
}

/**
 * The guest sent a byte count the host did not ask for: more than the requested length, more than
 * it announced, or a count that contradicts the bytes it sent.
 */
export class RemoteByteCountError extends RemoteProtocolError {
	override readonly name = 'RemoteByteCountError'
	/** The wire op the count broke (`read-file`, `read-file-stream`, `attach-session`, …). */
	readonly op: string
	/** The most the host accepts here (the requested length, or the announced size). */
	readonly expectedBytes: number
	/** What the guest sent, or claimed, when the host stopped reading. */
	readonly receivedBytes: number

	constructor(op: string, what: string, expectedBytes: number, receivedBytes: number) {
		super(`${op}: ${what}: expected at most ${expectedBytes} bytes, received ${receivedBytes}`)
		this.op = op
		this.expectedBytes = expectedBytes
		this.receivedBytes = receivedBytes
	}
}

/** The guest reported an `error` for the command (bad cwd, spawn failure, invalid timeout, …). */
export class RemoteCommandError extends SandboxError<'command-error'> {
	override readonly name = 'RemoteCommandError'
	/** The guest's error string. */
	readonly guestError: string

	constructor(guestError: string, options: SandboxErrorOptions = {}) {
		super(
			`the guest refused the command: ${guestError}${commandErrorHint(guestError)}`,
			'command-error',
			options,
		)
		this.guestError = guestError
	}
}

/**
 * What to do about a program the guest could not find: a whole shell line passed as the program
 * (`exec('npm test')`) is the usual first try, and `exec` runs one program with its arguments.
 */
export function commandErrorHint(guestError: string): string {
	const missing = /^spawn (.+) ENOENT$/s.exec(guestError)?.[1]
	if (missing === undefined) return ''
	if (/\s/.test(missing.trim())) {
		return " (exec runs one program with its arguments, not a shell line: pass the arguments apart, or run the line through a shell: exec('sh', ['-c', line]))"
	}
	return " (no such program in the sandbox: check its name and the sandbox's PATH)"
}

/** The guest refused to reserve an execution (e.g. `execution_capacity`). */
export class RemoteExecutionRefusedError extends SandboxError<'execution-refused'> {
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
export class RemoteCancellationUnknownError extends SandboxError<'cancellation-unknown'> {
	override readonly name: string = 'RemoteCancellationUnknownError'
	/** Absent when the guest refused before an execution was reserved (`agent_retiring`). */
	readonly executionId?: string
	/**
	 * The guest's refusal code when the guest itself said so (`agent_retiring` on a reservation,
	 * `cancellation_unconfirmed` on a cancel); absent when no answer came in the window.
	 */
	readonly guestCode?: 'agent_retiring' | 'cancellation_unconfirmed'
	/** Set by the sandbox once it retired (or tried to retire, or chose to keep) the unit. */
	retirement?: SandboxRetirementObservation

	constructor(
		executionId: string | undefined,
		detail: string,
		options: SandboxErrorOptions & {
			readonly guestCode?: 'agent_retiring' | 'cancellation_unconfirmed'
		} = {},
	) {
		const subject = executionId === undefined ? 'the guest' : `execution ${executionId}`
		const { guestCode, ...rest } = options
		super(
			`${subject}: ${detail}; outcome unknown; do not retry automatically`,
			'cancellation-unknown',
			{ ...rest, retryable: false },
		)
		if (executionId !== undefined) this.executionId = executionId
		if (guestCode !== undefined) this.guestCode = guestCode
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
export class ExecutionNotAttachableError extends SandboxError<'execution-not-attachable'> {
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

/**
 * A background command refused what its handle sent: `write` / `closeStdin` to a stdin that is not
 * open (`stdin-not-open`: spawned without `openStdin`, already closed, or the command ended), or
 * anything to an id the guest does not hold (`unknown-execution`). `guestCode` is the guest's code.
 */
export class ProcessInputRefusedError extends SandboxError {
	override readonly name = 'ProcessInputRefusedError'
	declare readonly reason: 'stdin-not-open' | 'unknown-execution' | 'input-refused'
	readonly executionId: string
	/** The handle's method: `write`, `closeStdin` or `kill`. */
	readonly operation: string
	readonly guestCode: string
	readonly executionState?: ExecutionState

	constructor(
		executionId: string,
		operation: string,
		reason: ProcessInputRefusedError['reason'],
		fields: { readonly guestCode: string; readonly executionState?: ExecutionState },
	) {
		const { guestCode, executionState } = fields
		const hint =
			reason === 'stdin-not-open'
				? 'its stdin is not open: spawn with openStdin: true, and write before closeStdin() and before it ends'
				: reason === 'unknown-execution'
					? 'the guest holds no such execution (it ended long ago, or the guest restarted)'
					: `the guest refused it (${guestCode})`
		super(`${operation} on background command ${executionId}: ${hint}`, reason)
		this.executionId = executionId
		this.operation = operation
		this.guestCode = guestCode
		if (executionState !== undefined) this.executionState = executionState
	}
}

/** `cancelExecution` of an id the guest does not hold (or a malformed one). */
export class ExecutionCancelRefusedError extends SandboxError<'execution-cancel-refused'> {
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

/** The guest refused a session request; `refusal` is its code (`session_capacity`, …). */
export class SessionRefusedError extends SandboxError<'session-refused'> {
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

/** A process survived SIGKILL, or the guest ran out of rounds or time; `pid` names it. */
export class QuiesceUnconfirmedError extends SandboxError<
	'quiesce-unconfirmed' | 'suspend-already-in-flight'
> {
	override readonly name = 'QuiesceUnconfirmedError'
	/** The process the guest could not confirm gone; undefined when the guest named none. */
	readonly pid: number | undefined
	/** The guest's own explanation. */
	readonly guestMessage: string
	/** The guest's refusal code. */
	readonly guestCode = AGENT_REFUSAL.quiesce_unconfirmed
	/** With `suspend-already-in-flight`: the spelling the specification gives that reason. */
	readonly specReason?: typeof SUSPEND_ALREADY_IN_FLIGHT

	/** `reason` other than the default names a host-side refusal (`suspend-already-in-flight`). */
	constructor(
		pid: number | undefined,
		guestMessage: string,
		reason: 'quiesce-unconfirmed' | 'suspend-already-in-flight' = 'quiesce-unconfirmed',
	) {
		super(`quiesce could not be confirmed: ${guestMessage}`, reason)
		this.pid = pid
		this.guestMessage = guestMessage
		if (reason === 'suspend-already-in-flight') this.specReason = SUSPEND_ALREADY_IN_FLIGHT
	}
}

/** The guest ran the flush but could not confirm it (timeout, non-zero exit). */
export class FlushUnconfirmedError extends SandboxError<
	'flush-unconfirmed' | 'suspend-already-in-flight'
> {
	override readonly name = 'FlushUnconfirmedError'
	readonly guestMessage: string
	/** The guest's refusal code. */
	readonly guestCode = AGENT_REFUSAL.flush_unconfirmed
	/** With `suspend-already-in-flight`: the spelling the specification gives that reason. */
	readonly specReason?: typeof SUSPEND_ALREADY_IN_FLIGHT

	/** `reason` other than the default names a host-side refusal (`suspend-already-in-flight`). */
	constructor(
		guestMessage: string,
		reason: 'flush-unconfirmed' | 'suspend-already-in-flight' = 'flush-unconfirmed',
	) {
		super(`flush could not be confirmed: ${guestMessage}`, reason, { retryable: true })
		this.guestMessage = guestMessage
		if (reason === 'suspend-already-in-flight') this.specReason = SUSPEND_ALREADY_IN_FLIGHT
	}
}
