/**
 * Refusals of the execution ops that say where the execution is (`executionState`, `'reserved'`
 * meaning it never started) and, for a bad attach offset, where its output ends. The connection
 * layer answers a plain `OpRefusal` with `error` (and `message`) only, so the execution handlers
 * answer these themselves (answer-execution-refusal.ts).
 */
import type { ExecutionState } from '../../wire/protocol.js'
import { OpRefusal } from '../handler/op-refusal.js'

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
