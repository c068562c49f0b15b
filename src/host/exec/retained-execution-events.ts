/**
 * Strict readers of the events a retained execution streams — on `execute { retainOutput }` and on
 * `attach-execution`: offset-carrying deltas, `attached`, the final `result` / `attach_result`, and
 * stream-shaped refusals with the execution's state. Pure; anything outside the vocabulary is a
 * `RemoteProtocolError`.
 */

import { isRecord } from '../../wire/is-record.js'
import type { ExecutionState, ExecutionTerminalState } from '../../wire/protocol.js'
import { RemoteProtocolError } from '../transport/transport-errors.js'
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
	  }

const STATES: ReadonlySet<string> = new Set([
	'reserved',
	'running',
	'cancelled',
	'completed',
	'failed',
])
const TERMINAL: ReadonlySet<string> = new Set(['cancelled', 'completed', 'failed'])

function isOffset(value: unknown): value is number {
	return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}

export function parseExecutionState(value: unknown): ExecutionState | undefined {
	return typeof value === 'string' && STATES.has(value) ? (value as ExecutionState) : undefined
}

function invalid(op: string, event: Record<string, unknown>): RemoteProtocolError {
	return new RemoteProtocolError(`${op}: invalid event ${JSON.stringify(event.type)}`)
}

export function parseRetainedExecutionEvent(
	op: 'execute' | 'attach-execution',
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
			if (op !== 'attach-execution') break
			if (!isOffset(event.fromOffset) || !isOffset(event.droppedBytes)) break
			return { kind: 'attached', fromOffset: event.fromOffset, droppedBytes: event.droppedBytes }
		case 'result': {
			if (op !== 'execute') break
			const metadata = parseTerminalMetadata(event)
			if (!metadata) break
			return { kind: 'result', metadata, cancelled: event.cancelled === true }
		}
		case 'attach_result': {
			if (op !== 'attach-execution') break
			const { outcome, started, error } = event
			if (typeof outcome !== 'string' || !TERMINAL.has(outcome)) break
			if (typeof started !== 'boolean') break
			if (error !== undefined && typeof error !== 'string') break
			let metadata: RemoteTerminalMetadata | undefined
			if (event.result !== undefined && event.result !== null) {
				metadata = parseTerminalMetadata(event.result)
				if (!metadata) break
			}
			return {
				kind: 'attach-result',
				outcome: outcome as ExecutionTerminalState,
				started,
				...(metadata ? { metadata } : {}),
				...(typeof error === 'string' ? { error } : {}),
				cancelled: isRecord(event.result) && event.result.cancelled === true,
			}
		}
		case 'error': {
			if (typeof event.error !== 'string') break
			const executionState = parseExecutionState(event.executionState)
			return {
				kind: 'refused',
				error: event.error,
				...(executionState === undefined ? {} : { executionState }),
			}
		}
	}
	throw invalid(op, event)
}
