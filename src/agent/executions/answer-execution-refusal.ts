/**
 * How the execution handlers answer a refusal themselves: in the op's shape, with the
 * `executionState` / `nextOffset` an `ExecutionRefusal` carries and any extra reply fields.
 */
import type { OpContext } from '../handler/op-context.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { ExecutionRefusal } from './execution-refusal.js'

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
