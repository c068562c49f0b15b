/**
 * The guest's half of the negotiated stream heartbeat (its rules are in wire/heartbeat.ts), for
 * any two-way stream op (`terminal`, `tcp-connect`, attach ops) in one call: `sendStreamReady`
 * sends `ready` — echoing the interval it will use, clamped to the floor, only when the request
 * asked for one — and only then starts sending `{ type: 'heartbeat' }` every interval and watching
 * the peer. Any received byte is life; polls made while the op has paused reading for backpressure
 * do not count as silence; three silent intervals destroy the socket, so the op's ordinary close
 * cleanup runs (a terminal's processes are torn down).
 */
import {
	clampRequestedHeartbeatMs,
	heartbeatPollMs,
	STREAM_HEARTBEAT_FRAME,
	StreamLiveness,
} from '../../wire/heartbeat.js'
import type { OpContext } from './op-context.js'

/**
 * Sends the stream's `ready` (with `fields`, and `heartbeatMs` when negotiated) and starts the
 * heartbeat. Returns the interval in use, or undefined when the request asked for none.
 */
export function sendStreamReady(
	ctx: OpContext,
	body: Record<string, unknown>,
	fields: Record<string, unknown> = {},
): number | undefined {
	const heartbeatMs = clampRequestedHeartbeatMs(body.heartbeatMs)
	ctx.send({ type: 'ready', ...fields, ...(heartbeatMs === undefined ? {} : { heartbeatMs }) })
	if (heartbeatMs !== undefined) startStreamHeartbeat(ctx, heartbeatMs)
	return heartbeatMs
}

/** Heartbeats out and a silence watchdog in, until the connection closes. Returns a stop. */
export function startStreamHeartbeat(ctx: OpContext, intervalMs: number): () => void {
	if (ctx.closed) return () => {}
	const { socket } = ctx
	const liveness = new StreamLiveness(intervalMs, performance.now())
	const unsubscribe = ctx.onBytes(() => liveness.noteBytes(performance.now()))
	const beat = setInterval(() => {
		// A peer not reading our backlog learns nothing from one more frame behind it.
		if (!socket.writableNeedDrain) ctx.send(STREAM_HEARTBEAT_FRAME)
	}, intervalMs)
	const watch = setInterval(() => {
		if (liveness.check(performance.now(), socket.isPaused()) === 'alive') return
		stop()
		socket.destroy()
	}, heartbeatPollMs(intervalMs))
	let stopped = false
	const stop = () => {
		if (stopped) return
		stopped = true
		clearInterval(beat)
		clearInterval(watch)
		unsubscribe()
	}
	ctx.onClose(stop)
	return stop
}
