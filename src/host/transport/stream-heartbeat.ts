/**
 * The host's half of the negotiated stream heartbeat (its rules are in wire/heartbeat.ts). The
 * open request carries `heartbeatMs` only when the transport asks for one; the watchdog is armed,
 * and heartbeats sent, only once the guest echoed an interval in its `ready` and only when that
 * echo lies in [MIN_STREAM_HEARTBEAT_MS, STREAM_HEARTBEAT_MAX_ECHO_FACTOR × requested]. Any
 * received byte is life; polls made while reading is paused for backpressure are not silence;
 * three silent intervals fail the channel with `AgentStreamSilentError`, so a terminal's `exited`
 * resolves `exitCode: -1` and a tcp connection's `closed` resolves, exactly as on a closed socket.
 */
import {
	acceptEchoedHeartbeatMs,
	heartbeatPollMs,
	STREAM_HEARTBEAT_FRAME,
	StreamLiveness,
} from '../../wire/heartbeat.js'
import type { FrameChannel } from './frame-channel.js'
import { AgentStreamSilentError } from './transport-errors.js'

/** The open request's body with `heartbeatMs` added when one is asked for. */
export function withHeartbeatRequest(body: unknown, requestedMs: number | undefined): unknown {
	if (requestedMs === undefined || requestedMs <= 0) return body
	if (body === null || typeof body !== 'object' || Array.isArray(body)) return body
	return { ...body, heartbeatMs: requestedMs }
}

/**
 * Arms the heartbeat on a channel whose `ready` carried `echoed`; a no-op (answering undefined)
 * when nothing was asked for or the echo is absent or out of range. Stops itself on close.
 */
export function startHostStreamHeartbeat(
	channel: FrameChannel,
	requestedMs: number | undefined,
	echoed: unknown,
): number | undefined {
	if (requestedMs === undefined || requestedMs <= 0 || channel.isClosed) return undefined
	const intervalMs = acceptEchoedHeartbeatMs(requestedMs, echoed)
	if (intervalMs === undefined) return undefined
	const liveness = new StreamLiveness(intervalMs, performance.now())
	const unsubscribe = channel.onBytes(() => liveness.noteBytes(performance.now()))
	const beat = setInterval(() => channel.send(STREAM_HEARTBEAT_FRAME), intervalMs)
	const watch = setInterval(() => {
		if (liveness.check(performance.now(), channel.readingPaused) === 'alive') return
		channel.fail(new AgentStreamSilentError(channel.op, intervalMs))
	}, heartbeatPollMs(intervalMs))
	void channel.closed.then(() => {
		clearInterval(beat)
		clearInterval(watch)
		unsubscribe()
	})
	return intervalMs
}
