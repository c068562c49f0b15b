/**
 * Strict readers of the events a retained execution streams — on `execute { retainOutput }` and on
 * `attach-execution`: offset-carrying deltas, `attached`, the final `result` / `attach_result`, and
 * stream-shaped refusals with the execution's state. Pure; anything outside the vocabulary is a
 * `RemoteProtocolError`.
 */

import { isRecord } from '../../common/is-record.js'
import {
	AGENT_OP,
	type ExecutionState,
	type ExecutionTerminalState,
	isExecutionState,
	isExecutionTerminalState,
} from '../../wire/protocol.js'
import type { WireRefusal } from '../../wire/refusals.js'
import { RemoteProtocolError } from '../refusals/refusal-errors.js'
import { readRefusal } from '../transport/exchange.js'
import type { RemoteTerminalMetadata } from './remote-execution-messages.js'
import { parseTerminalMetadata } from './remote-execution-reply.js'

export type RetainedExecutionEvent =
	| {
			readonly kind: 'delta'
			readonly stream: 'stdout' | 'stderr'
			readonly data: string
			readonly offset: number
			readonly nextOffset: number
	  }
	| { readonly kind: 'attached'; readonly fromOffset: number; readonly droppedBytes: number }
	| {
			readonly kind: 'result'
			readonly metadata: RemoteTerminalMetadata
			/** The run ended because of a cancel. */
			readonly cancelled: boolean
	  }
	| {
			readonly kind: 'attach-result'
			readonly outcome: ExecutionTerminalState
			readonly started: boolean
			readonly metadata?: RemoteTerminalMetadata
			readonly error?: string
			readonly cancelled: boolean
	  }
	| {
			readonly kind: 'refused'
			readonly error: string
			readonly executionState?: ExecutionState
			/** The same refusal read into its code. */
			readonly refusal: WireRefusal
	  }

function isOffset(value: unknown): value is number {
	return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}

function invalid(op: string, event: Record<string, unknown>): RemoteProtocolError {
	return new RemoteProtocolError(`${op}: invalid event ${JSON.stringify(event.type)}`)
}

export function parseRetainedExecutionEvent(
	op: typeof AGENT_OP.execute | typeof AGENT_OP.attachExecution,
	event: Record<string, unknown>,
): RetainedExecutionEvent {
	switch (event.type) {
		case 'stdout_delta':
		case 'stderr_delta': {
			const { data, offset, nextOffset } = event
			if (typeof data !== 'string' || !isOffset(offset) || !isOffset(nextOffset)) break
			if (nextOffset < offset) break
			const stream = event.type === 'stdout_delta' ? 'stdout' : 'stderr'
			return { kind: 'delta', stream, data, offset, nextOffset }
		}
		case 'attached':
			if (op !== AGENT_OP.attachExecution) break
			if (!isOffset(event.fromOffset) || !isOffset(event.droppedBytes)) break
			return { kind: 'attached', fromOffset: event.fromOffset, droppedBytes: event.droppedBytes }
		case 'result': {
			if (op !== AGENT_OP.execute) break
			const metadata = parseTerminalMetadata(event)
			if (!metadata) break
			return { kind: 'result', metadata, cancelled: event.cancelled === true }
		}
		case 'attach_result': {
			if (op !== AGENT_OP.attachExecution) break
			const { outcome, started, error } = event
			if (!isExecutionTerminalState(outcome)) break
			if (typeof started !== 'boolean') break
			if (error !== undefined && typeof error !== 'string') break
			let metadata: RemoteTerminalMetadata | undefined
			if (event.result !== undefined && event.result !== null) {
				metadata = parseTerminalMetadata(event.result)
				if (!metadata) break
			}
			return {
				kind: 'attach-result',
				outcome,
				started,
				...(metadata ? { metadata } : {}),
				...(typeof error === 'string' ? { error } : {}),
				cancelled: isRecord(event.result) && event.result.cancelled === true,
			}
		}
		case 'error': {
			if (typeof event.error !== 'string') break
			const refusal = readRefusal(event)
			return {
				kind: 'refused',
				error: event.error,
				...(isExecutionState(event.executionState) ? { executionState: event.executionState } : {}),
				refusal,
			}
		}
	}
	throw invalid(op, event)
}
