/**
 * `execution-input` and `signal-execution` (wire/execution-input.ts): what a host sends a running
 * background command. Input goes to a run started with `openStdin` and is answered once the pipe
 * took it (a child that does not read holds the answer: that is the backpressure). A signal goes to
 * the run's whole process group; a run that already ended is answered `delivered: false`, never
 * signalled (its process group id may be reused).
 */
import { isExecutionId } from '../../wire/execution-id.js'
import { isExecutionSignal, MAX_EXECUTION_INPUT_BYTES } from '../../wire/execution-input.js'
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import { answerExecutionRefusal } from '../executions/answer-execution-refusal.js'
import type { ExecutionProcess } from '../executions/execution-process.js'
import { ExecutionRefusal } from '../executions/execution-refusal.js'
import type { OpContext, OpHandler } from '../handler/op-context.js'

function invalid(detail: string): ExecutionRefusal {
	return new ExecutionRefusal(formatRefusal(AGENT_REFUSAL.invalid_execution_input, detail))
}

function inputBytes(value: unknown): Buffer {
	if (value === undefined) return Buffer.alloc(0)
	if (typeof value !== 'string') throw invalid('data must be a base64 string')
	const bytes = Buffer.from(value, 'base64')
	if (bytes.length > MAX_EXECUTION_INPUT_BYTES) {
		throw invalid(`data must be at most ${MAX_EXECUTION_INPUT_BYTES} bytes`)
	}
	return bytes
}

/** How often a run still `reserved` is looked at again (its `execute` is on another connection). */
const START_POLL_MS = 10

/**
 * The running process of `executionId`. A host hands out a background command's id once the guest
 * reserved it, before its `execute` (another connection) arrived, so a `reserved` run is waited
 * for, at most until its lease lapses.
 */
async function runningProcess(
	ctx: OpContext,
	executionId: string,
): Promise<ExecutionProcess | undefined> {
	const deadline = Date.now() + ctx.config.executionLeaseTtlMs
	while (ctx.executions.stateOf(executionId) === 'reserved' && Date.now() < deadline) {
		if (ctx.closed) return undefined
		await new Promise((resolve) => setTimeout(resolve, START_POLL_MS))
	}
	return ctx.executions.runningProcess(executionId)
}

export const executionInput: OpHandler = async (body, ctx) => {
	try {
		const { executionId, end } = body
		if (!isExecutionId(executionId)) throw new ExecutionRefusal(AGENT_REFUSAL.invalid_execution_id)
		if (end !== undefined && typeof end !== 'boolean') throw invalid('end must be a boolean')
		const data = inputBytes(body.data)
		const run = await runningProcess(ctx, executionId)
		const taken = run ? await run.writeStdin(data, end === true) : false
		if (!taken) {
			throw new ExecutionRefusal(AGENT_REFUSAL.stdin_not_open, {
				executionState: ctx.executions.stateOf(executionId) ?? 'completed',
			})
		}
		ctx.reply({ ok: true })
	} catch (error) {
		if (!answerExecutionRefusal(ctx, 'request', error)) throw error
	}
}

export const signalExecution: OpHandler = async (body, ctx) => {
	try {
		const { executionId, signal } = body
		if (!isExecutionId(executionId)) throw new ExecutionRefusal(AGENT_REFUSAL.invalid_execution_id)
		if (!isExecutionSignal(signal)) throw invalid('signal must be one of EXECUTION_SIGNALS')
		const run = await runningProcess(ctx, executionId)
		ctx.reply({ ok: true, delivered: run?.signal(signal) ?? false })
	} catch (error) {
		if (!answerExecutionRefusal(ctx, 'request', error)) throw error
	}
}
