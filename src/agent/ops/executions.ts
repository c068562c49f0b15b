/**
 * `reserve-execution`, `execute` and `cancel-execution` (upstream shapes §3.5): thin handlers that
 * validate the body, then hand over to the execution registry and the process runner. `execute`
 * streams `stdout_delta`/`stderr_delta` events, then exactly one `result` or `error`, then the
 * terminator.
 */

import { parseExecuteRequest } from '../execute-request.js'
import { isExecutionId } from '../execution-id.js'
import { type OutputSink, startExecutionProcess } from '../execution-process.js'
import type { OpContext, OpHandler } from '../op-context.js'
import { OpRefusal } from '../op-context.js'
import { resolveWorkingDirectory } from '../working-directory.js'

export const reserveExecution: OpHandler = (body, ctx) => {
	const requested = body.executionId
	if (requested !== undefined && !isExecutionId(requested)) {
		throw new OpRefusal('invalid_execution_id')
	}
	ctx.reply(ctx.executions.reserve(requested))
}

/** Output events onto the connection; pauses the child while the socket buffer is full. */
function connectionSink(ctx: OpContext): OutputSink {
	return {
		write: (stream, data) => {
			if (ctx.closed) return true // nobody to tell; keep draining the pipes
			return ctx.send({ type: stream === 'stdout' ? 'stdout_delta' : 'stderr_delta', data })
		},
		onDrain: (resume) => {
			if (ctx.closed) {
				resume()
				return
			}
			let resumed = false
			const once = () => {
				if (resumed) return
				resumed = true
				ctx.socket.off('drain', once)
				resume()
			}
			ctx.socket.once('drain', once)
			ctx.onClose(once)
		},
	}
}

export const execute: OpHandler = async (body, ctx) => {
	const request = parseExecuteRequest(body, ctx.config)
	const cwd = await resolveWorkingDirectory(request.cwd, ctx.config)
	const { process: run, finalEvent } = ctx.executions.start(request.executionId, () =>
		startExecutionProcess(
			{ ...request, cwd },
			{
				graceMs: ctx.config.cancelGraceMs,
				confirmTimeoutMs: ctx.config.cancelConfirmTimeoutMs,
			},
			connectionSink(ctx),
		),
	)
	if (request.executionId === undefined) {
		// Nothing can cancel an unreserved run by id: its connection is its only lifeline.
		ctx.onClose(() => run.kill())
	}
	const event = await finalEvent
	ctx.send(event)
	ctx.endStream()
}

export const cancelExecution: OpHandler = async (body, ctx) => {
	const { executionId } = body
	if (!isExecutionId(executionId)) throw new OpRefusal('invalid_execution_id')
	ctx.reply(await ctx.executions.cancel(executionId))
}
