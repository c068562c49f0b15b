/**
 * What a remote execution peer answers, once read, under the names the host has always exported.
 * The shapes themselves are the wire's (`wire/protocol.ts`); the readers are
 * `remote-execution-reply.ts` and `retained-execution-events.ts`.
 */
import type { AGENT_PROTOCOL_VERSION } from '../../wire/features.js'
import type {
	CancelExecutionReply,
	ExecEvent,
	ExecutionState,
	ExecutionTerminalMetadata,
	ReserveExecutionReply,
} from '../../wire/protocol.js'

/** A reservation the host accepted: the one protocol version it speaks, a well-formed id. */
export interface RemoteReservation
	extends Pick<ReserveExecutionReply, 'ok' | 'executionId' | 'leaseExpiresAt'> {
	readonly protocolVersion: typeof AGENT_PROTOCOL_VERSION
	/** Only when the caller named the id: where the guest already holds that execution. */
	readonly state?: ExecutionState
}

/** What an adapter's `execute` resolves with: the run's terminal metadata, as the wire has it. */
export type RemoteTerminalMetadata = ExecutionTerminalMetadata

export type RemoteCancellationAcknowledgement = CancelExecutionReply

/** One event of a plain `execute` stream, as the host reads it. */
export type RemoteExecEvent = ExecEvent
