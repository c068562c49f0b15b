/**
 * The retained path of `execute` (`retainOutput: true`, an `executionId` required): the run writes
 * into its record's `OutputLog` and this connection is only its first reader — deltas carry
 * `offset`/`nextOffset`, a reader more than one log behind is dropped, and when the connection goes
 * away the command keeps running for `attach-execution` to pick up. The stream still ends with
 * exactly one `result` or `error`, then the terminator.
 */

import { connectionReader } from '../executions/connection-reader.js'
import type { ResolvedExecuteRequest } from '../executions/execute-request.js'
import { startExecutionProcess } from '../executions/execution-process.js'
import type { OpContext } from '../handler/op-context.js'

export async function executeRetained(
	request: ResolvedExecuteRequest,
	executionId: string,
	cwd: string,
	ctx: OpContext,
): Promise<void> {
	const { finalEvent, retained } = ctx.executions.startRetained(executionId, (sink) =>
		startExecutionProcess(
			{ ...request, cwd },
			{
				graceMs: ctx.config.cancelGraceMs,
				confirmTimeoutMs: ctx.config.cancelConfirmTimeoutMs,
			},
			sink,
			ctx.workloadCgroups,
			ctx.startedAhead,
		),
	)
	// Registered in the same tick as the spawn: nothing the run writes can be missed.
	const reader = connectionReader(ctx, ctx.config.executionLogBytes)
	const follow = retained.follow(reader, 0)
	reader.replay(follow.replay)
	ctx.onClose(follow.stop)
	const event = await finalEvent
	follow.stop()
	ctx.send(event)
	ctx.endStream()
}
