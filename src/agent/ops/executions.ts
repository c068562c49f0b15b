/**
 * `reserve-execution`, `execute` and `cancel-execution`: thin handlers that
 * validate the body, then hand over to the execution registry and the process runner. `execute`
 * streams `stdout_delta`/`stderr_delta` events, then exactly one `result` or `error`, then the
 * terminator. A run with `retainOutput` goes through `execute-retained.ts`. Every reserve and cancel
 * answer (a cancel's refusals included) carries `guestBootId`; a cancellation the agent could not
 * confirm fences it (`gates.retiring`): from then on it serves only `healthz` and `cancel-execution`.
 */

import { isExecutionId } from '../../wire/execution-id.js'
import { AGENT_REFUSAL } from '../../wire/refusals.js'
import { answerExecutionRefusal } from '../executions/answer-execution-refusal.js'
import { parseExecuteRequest } from '../executions/execute-request.js'
import { type OutputSink, startExecutionProcess } from '../executions/execution-process.js'
import { resolveWorkingDirectory } from '../files/working-directory.js'
import type { OpContext, OpHandler } from '../handler/op-context.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { guestBootId } from '../lifecycle/guest-boot-id.js'
import { executeRetained } from './execute-retained.js'

export const reserveExecution: OpHandler = (body, ctx) => {
	const requested = body.executionId
	if (requested !== undefined && !isExecutionId(requested)) {
		throw new OpRefusal(AGENT_REFUSAL.invalid_execution_id)
	}
	ctx.reply({ ...ctx.executions.reserve(requested), guestBootId: guestBootId() })
}

/** Output events onto the connection; pauses the child while the socket buffer is full. */
function connectionSink(ctx: OpContext): OutputSink {
	return {
		write: (stream, data) => {
			if (ctx.closed) return true // nobody to tell; keep draining the pipes
			const type = stream === 'stdout' ? 'stdout_delta' : 'stderr_delta'
			// A binary delta is the text's UTF-8 bytes: the same characters, never split, no escaping.
			if (ctx.binaryFrames) return ctx.sendBinary(type, Buffer.from(data, 'utf8'))
			return ctx.send({ type, data })
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
	try {
		await executeCommand(body, ctx)
	} catch (error) {
		if (!answerExecutionRefusal(ctx, 'stream', error)) throw error
	}
}

async function executeCommand(body: Record<string, unknown>, ctx: OpContext): Promise<void> {
	const request = parseExecuteRequest(body, ctx.config)
	const cwd = await resolveWorkingDirectory(request.cwd, ctx.config)
	// Reserved here, in the tick that starts it: a fencing cancel that came first wins (start refuses).
	if (request.reserve && request.executionId !== undefined) {
		ctx.executions.reserveUnseen(request.executionId)
	}
	if (request.retainOutput && request.executionId !== undefined) {
		await executeRetained(request, request.executionId, cwd, ctx)
		return
	}
	const { process: run, finalEvent } = ctx.executions.start(request.executionId, () =>
		startExecutionProcess(
			{ ...request, cwd },
			{
				graceMs: ctx.config.cancelGraceMs,
				confirmTimeoutMs: ctx.config.cancelConfirmTimeoutMs,
			},
			connectionSink(ctx),
			ctx.workloadCgroups,
			ctx.startedAhead,
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
	try {
		const { executionId } = body
		if (!isExecutionId(executionId)) throw new OpRefusal(AGENT_REFUSAL.invalid_execution_id)
		// Switched off, `fence` is ignored exactly as by an agent that predates it.
		const fence = ctx.config.executeReserves && body.fence === true
		ctx.reply({
			...(await ctx.executions.cancel(executionId, { fence })),
			guestBootId: guestBootId(),
		})
	} catch (error) {
		// The command may still run and nothing can prove otherwise: fence the agent for good.
		if (error instanceof OpRefusal && error.error === AGENT_REFUSAL.cancellation_unconfirmed) {
			ctx.gates.retiring = true
		}
		if (!answerExecutionRefusal(ctx, 'request', error, { guestBootId: guestBootId() })) throw error
	}
}
