/**
 * Refusals of the execution ops that say where the execution is (`executionState`, `'reserved'`
 * meaning it never started) and, for a bad attach offset, where its output ends. The connection
 * layer answers a plain `OpRefusal` with `error` (and `message`) only, so the execution handlers
 * answer these themselves through `answerExecutionRefusal`, with any extra reply fields.
 */
import type { ExecutionState } from '../../wire/protocol.js'
import { type OpContext, OpRefusal } from '../server/op-context.js'

export class ExecutionRefusal extends OpRefusal {
	override readonly name = 'ExecutionRefusal'
	readonly executionState?: ExecutionState
	readonly nextOffset?: number

	constructor(
		error: string,
		fields: { executionState?: ExecutionState; nextOffset?: number; message?: string } = {},
	) {
		super(error, fields.message)
		if (fields.executionState !== undefined) this.executionState = fields.executionState
		if (fields.nextOffset !== undefined) this.nextOffset = fields.nextOffset
	}
}

function refusalFields(refusal: OpRefusal): Record<string, unknown> {
	if (!(refusal instanceof ExecutionRefusal)) return {}
	return {
		...(refusal.executionState === undefined ? {} : { executionState: refusal.executionState }),
		...(refusal.nextOffset === undefined ? {} : { nextOffset: refusal.nextOffset }),
	}
}

/**
 * Answers `error` in the op's shape when it is a refusal (request: `{ ok: false, error, message?,
 * …extra }`; stream: `{ type: 'error', error, … }` + terminator) and returns true; anything else
 * is left to the connection layer (returns false).
 */
export function answerExecutionRefusal(
	ctx: OpContext,
	shape: 'request' | 'stream',
	error: unknown,
	extra: Record<string, unknown> = {},
): boolean {
	if (!(error instanceof OpRefusal)) return false
	const fields = refusalFields(error)
	if (shape === 'stream') {
		ctx.send({ type: 'error', error: error.error, ...fields, ...extra })
		ctx.endStream()
		return true
	}
	ctx.reply({
		ok: false,
		error: error.error,
		...(error.detail === undefined ? {} : { message: error.detail }),
		...fields,
		...extra,
	})
	return true
}
