/**
 * The refusal a heartbeat-watched stream ends with when the guest went silent (stream-heartbeat.ts).
 * Separate from `AgentReadTimeoutError`: that bound is for request-shaped exchanges, this one is
 * the negotiated liveness of a long-lived stream.
 */
import { SandboxError } from '../../contract/errors.js'
import { STREAM_HEARTBEAT_MISS_LIMIT } from '../../wire/heartbeat.js'

export class AgentStreamSilentError extends SandboxError {
	override readonly name = 'AgentStreamSilentError'
	readonly op: string
	readonly heartbeatMs: number

	constructor(op: string, heartbeatMs: number) {
		super(
			`${op}: the guest agent sent nothing for ${STREAM_HEARTBEAT_MISS_LIMIT} heartbeat intervals of ${heartbeatMs} ms; the stream is dead`,
			'stream-silent',
			{ retryable: true },
		)
		this.op = op
		this.heartbeatMs = heartbeatMs
	}
}
