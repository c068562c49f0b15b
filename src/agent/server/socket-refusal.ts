/**
 * How the agent turns a connection away: stop reading, write the refusal frame, and DESTROY the
 * socket once the frame is flushed or after `NAMZU_AGENT_REFUSAL_FLUSH_GRACE_MS`, whichever comes
 * first. Never a bare `end()`: that closes only our writable half, and a refused peer could keep
 * streaming into the frame buffer through the readable half it leaves open.
 */
import type { Socket } from 'node:net'
import { encodeFrame } from '../../wire/frame.js'
import type { AgentRefusal } from '../../wire/protocol.js'

export function refuseAndDestroy(
	socket: Socket,
	refusal: AgentRefusal,
	flushGraceMs: number,
): void {
	socket.removeAllListeners('data')
	socket.pause()
	if (socket.destroyed) return
	if (!socket.writable) {
		socket.destroy()
		return
	}
	const timer = setTimeout(() => socket.destroy(), flushGraceMs)
	socket.once('close', () => clearTimeout(timer))
	socket.end(encodeFrame(refusal), () => {
		clearTimeout(timer)
		socket.destroy()
	})
}
