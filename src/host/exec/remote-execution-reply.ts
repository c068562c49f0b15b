/**
 * Strict readers of what a remote execution peer answers: the reservation, the cancellation
 * acknowledgement, and each event of the execute stream (shapes in `remote-execution-messages.ts`).
 * Pure; a refusal becomes its error through the one table (`../refusals/refusal-to-error.ts`), and
 * the engine decides what a rejected acknowledgement means.
 */

import { isRecord } from '../../common/is-record.js'
import { binaryEventBytes } from '../../wire/binary-frame.js'
import {
	AGENT_OP,
	type ExecutionUsage,
	isExecutionState,
	isExecutionTerminalState,
} from '../../wire/protocol.js'
import { RemoteProtocolError } from '../refusals/refusal-errors.js'
import { refusalToError } from '../refusals/refusal-to-error.js'
import { REMOTE_EXECUTION_PROTOCOL_VERSION } from '../transport/agent-transport-options.js'
import { refusalOf } from '../transport/exchange.js'
import type {
	RemoteCancellationAcknowledgement,
	RemoteExecEvent,
	RemoteReservation,
	RemoteTerminalMetadata,
} from './remote-execution-messages.js'

/** `exec_` followed by a canonical UUID, versions 1 to 5. */
export const EXECUTION_ID_PATTERN =
	/^exec_[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i

/** Validates a reservation; a guest refusal becomes the named error for its code. */
export function parseReservation(reply: unknown): RemoteReservation {
	if (!isRecord(reply)) throw new RemoteProtocolError('reserve-execution: reply is not an object')
	const refusal = refusalOf(reply)
	if (refusal) throw refusalToError('reserve', refusal, { op: AGENT_OP.reserveExecution })
	if (reply.ok !== true) throw new RemoteProtocolError('reserve-execution: reply lacks ok: true')
	if (reply.protocolVersion !== REMOTE_EXECUTION_PROTOCOL_VERSION) {
		throw new RemoteProtocolError(
			`reserve-execution: protocol version ${JSON.stringify(reply.protocolVersion)} is not ${REMOTE_EXECUTION_PROTOCOL_VERSION}; rebuild the guest image`,
		)
	}
	if (typeof reply.executionId !== 'string' || !EXECUTION_ID_PATTERN.test(reply.executionId)) {
		throw new RemoteProtocolError('reserve-execution: malformed executionId')
	}
	if (typeof reply.leaseExpiresAt !== 'number' || !Number.isFinite(reply.leaseExpiresAt)) {
		throw new RemoteProtocolError('reserve-execution: leaseExpiresAt is not a finite number')
	}
	return {
		ok: true,
		protocolVersion: REMOTE_EXECUTION_PROTOCOL_VERSION,
		executionId: reply.executionId,
		leaseExpiresAt: reply.leaseExpiresAt,
		...(isExecutionState(reply.state) ? { state: reply.state } : {}),
	}
}

const USAGE_COUNTERS = [
	'cpuUserMs',
	'cpuSystemMs',
	'peakMemoryBytes',
	'ioReadBytes',
	'ioWriteBytes',
] as const

/** The accounting fields of a result; undefined when one is present but malformed. */
function parseUsage(value: Record<string, unknown>): ExecutionUsage | undefined {
	const usage: Record<string, number | boolean> = {}
	for (const field of USAGE_COUNTERS) {
		const counter = value[field]
		if (counter === undefined) continue
		if (typeof counter !== 'number' || !Number.isSafeInteger(counter) || counter < 0) return
		usage[field] = counter
	}
	if (value.oomKilled !== undefined) {
		if (typeof value.oomKilled !== 'boolean') return undefined
		usage.oomKilled = value.oomKilled
	}
	return usage
}

/** Terminal metadata of a run, or undefined when the value is not one. */
export function parseTerminalMetadata(value: unknown): RemoteTerminalMetadata | undefined {
	if (!isRecord(value)) return undefined
	const { exitCode, timedOut, durationMs, signal, stdoutTruncated, stderrTruncated } = value
	if (typeof exitCode !== 'number' || !Number.isInteger(exitCode)) return undefined
	if (typeof timedOut !== 'boolean') return undefined
	if (typeof durationMs !== 'number' || !Number.isFinite(durationMs) || durationMs < 0)
		return undefined
	if (signal !== undefined && signal !== null && typeof signal !== 'string') return undefined
	if (stdoutTruncated !== undefined && typeof stdoutTruncated !== 'boolean') return undefined
	if (stderrTruncated !== undefined && typeof stderrTruncated !== 'boolean') return undefined
	const usage = parseUsage(value)
	if (!usage) return undefined
	return {
		...usage,
		exitCode,
		timedOut,
		durationMs,
		...(typeof signal === 'string' ? { signal } : {}),
		...(stdoutTruncated === undefined ? {} : { stdoutTruncated }),
		...(stderrTruncated === undefined ? {} : { stderrTruncated }),
	}
}

/** A valid acknowledgement, or undefined (a refusal or garbage: the engine tries again). */
export function parseCancellationAck(
	reply: unknown,
): RemoteCancellationAcknowledgement | undefined {
	if (!isRecord(reply) || reply.ok !== true) return undefined
	if (!isExecutionTerminalState(reply.state)) return undefined
	if (typeof reply.started !== 'boolean') return undefined
	let result: RemoteTerminalMetadata | undefined
	if (reply.result !== undefined && reply.result !== null) {
		result = parseTerminalMetadata(reply.result)
		if (!result) return undefined
	}
	if (reply.error !== undefined && typeof reply.error !== 'string') return undefined
	return {
		ok: true,
		state: reply.state,
		started: reply.started,
		...(result ? { result } : {}),
		...(typeof reply.error === 'string' ? { error: reply.error } : {}),
	}
}

/** One execute event; anything outside the vocabulary is a protocol error. */
export function parseExecEvent(event: Record<string, unknown>): RemoteExecEvent {
	switch (event.type) {
		case 'stdout_delta':
		case 'stderr_delta': {
			// A binary delta carries the UTF-8 bytes of the text (the guest never splits a character).
			const bytes = binaryEventBytes(event)
			if (bytes) return { type: event.type, data: bytes.toString('utf8') }
			if (typeof event.data !== 'string') break
			return { type: event.type, data: event.data }
		}
		case 'result': {
			const metadata = parseTerminalMetadata(event)
			if (!metadata) break
			return { type: 'result', ...metadata }
		}
		case 'error':
			if (typeof event.error !== 'string') break
			return { type: 'error', error: event.error }
	}
	throw new RemoteProtocolError(`execute: invalid event ${JSON.stringify(event.type)}`)
}
