/**
 * What a remote execution peer answers, once read: the reservation, the terminal metadata of a
 * run, the cancellation acknowledgement, and the events of the execute stream. Types only; the
 * readers are `remote-execution-reply.ts`.
 */
import type { REMOTE_EXECUTION_PROTOCOL_VERSION } from '../transport/agent-transport-options.js'

export interface RemoteReservation {
	readonly ok: true
	readonly protocolVersion: typeof REMOTE_EXECUTION_PROTOCOL_VERSION
	readonly executionId: string
	readonly leaseExpiresAt: number
}

export interface RemoteTerminalMetadata {
	readonly exitCode: number
	readonly timedOut: boolean
	readonly durationMs: number
	readonly signal?: string
	readonly stdoutTruncated?: boolean
	readonly stderrTruncated?: boolean
}

export type RemoteExecutionState = 'cancelled' | 'completed' | 'failed'

export interface RemoteCancellationAcknowledgement {
	readonly ok: true
	readonly state: RemoteExecutionState
	readonly started: boolean
	readonly result?: RemoteTerminalMetadata
	readonly error?: string
}

export type RemoteExecEvent =
	| { readonly type: 'stdout_delta' | 'stderr_delta'; readonly data: string }
	| ({ readonly type: 'result' } & RemoteTerminalMetadata)
	| { readonly type: 'error'; readonly error: string }
