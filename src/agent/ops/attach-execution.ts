/**
 * `attach-execution {executionId, fromOffset?}`: follows a run that retains
 * its output, from any connection. `attached` (with the replay's real start and `droppedBytes` when
 * the log already evicted what was asked for), the held deltas from `fromOffset` (default 0), the
 * live ones, then `attach_result` and the terminator. An attach only observes: it never signals the
 * command, a frame from the peer drops it, and so does falling more than one log behind. Refusals
 * are stream-shaped and carry `executionState` when the record is known (`'reserved'` = the
 * command never started).
 */

import { isExecutionId } from '../../wire/execution-id.js'
import { AGENT_REFUSAL } from '../../wire/refusals.js'
import { answerExecutionRefusal } from '../executions/answer-execution-refusal.js'
import { connectionReader } from '../executions/connection-reader.js'
import { ExecutionRefusal } from '../executions/execution-refusal.js'
import type { RetainedFollow } from '../executions/retained-output.js'
import type { OpHandler } from '../handler/op-context.js'
import { isIntegerIn, NON_NEGATIVE_INTEGER } from '../handler/value-checks.js'
import { guestBootId } from '../lifecycle/guest-boot-id.js'
import { OutputLogOffsetError } from '../process/output-log.js'

function requestedOffset(value: unknown): number {
	if (value === undefined || value === null) return 0
	if (!isIntegerIn(value, NON_NEGATIVE_INTEGER))
		throw new ExecutionRefusal(AGENT_REFUSAL.invalid_offset)
	return value
}

export const attachExecution: OpHandler = async (body, ctx) => {
	try {
		const { executionId } = body
		if (!isExecutionId(executionId)) throw new ExecutionRefusal(AGENT_REFUSAL.invalid_execution_id)
		const fromOffset = requestedOffset(body.fromOffset)
		const target = ctx.executions.attachable(executionId)
		const reader = connectionReader(ctx, ctx.config.executionLogBytes)
		let follow: RetainedFollow
		try {
			follow = target.retained.follow(reader, fromOffset)
		} catch (error) {
			if (!(error instanceof OutputLogOffsetError)) throw error
			throw new ExecutionRefusal(AGENT_REFUSAL.invalid_offset, {
				executionState: target.state(),
				nextOffset: error.nextOffset,
			})
		}
		ctx.onClose(follow.stop)
		// Observer only: whatever the peer sends ends this attachment, never the command.
		ctx.onFrame(() => {
			follow.stop()
			ctx.socket.destroy()
		})
		ctx.send({
			type: 'attached',
			executionId,
			state: target.state(),
			fromOffset: follow.fromOffset,
			droppedBytes: follow.droppedBytes,
			guestBootId: guestBootId(),
		})
		reader.replay(follow.replay)
		await target.settled
		follow.stop()
		if (ctx.closed) return
		ctx.send({
			type: 'attach_result',
			executionId,
			...target.final(),
			nextOffset: target.retained.nextOffset,
		})
		ctx.endStream()
	} catch (error) {
		if (!answerExecutionRefusal(ctx, 'stream', error)) throw error
	}
}
