/**
 * The reader of a retained run that one connection is (`execute` or `attach-execution`): deltas
 * written onto the socket, and a reader too far behind cut off (retained-output.ts).
 */
import type { RetainedDeltaEvent } from '../../wire/protocol.js'
import type { OpContext } from '../handler/op-context.js'
import type { RetainedOutputReader } from './retained-output.js'

/** A reader over one connection (`execute` or `attach-execution`). */
export interface ConnectionReader extends RetainedOutputReader {
	/** Sends the replay; what it leaves unsent does not count against the slow-reader budget. */
	replay(events: readonly RetainedDeltaEvent[]): void
}

/**
 * Writes deltas onto a connection and destroys it once more than `limitBytes` of live output sit
 * unsent in its buffer (a slow reader must not make the agent hold unbounded output for it; it
 * reattaches from its last offset instead).
 */
export function connectionReader(ctx: OpContext, limitBytes: number): ConnectionReader {
	let baseline = 0
	return {
		deliver: (event) => {
			if (ctx.closed) return
			ctx.send(event)
			if (ctx.socket.writableLength > baseline + limitBytes) ctx.socket.destroy()
		},
		replay: (events) => {
			for (const event of events) {
				if (ctx.closed) return
				ctx.send(event)
			}
			baseline = ctx.socket.writableLength
		},
	}
}
