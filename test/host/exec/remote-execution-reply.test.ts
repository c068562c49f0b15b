import { describe, expect, it } from 'vitest'
import {
	parseCancellationAck,
	parseExecEvent,
	parseTerminalMetadata,
} from '../../../src/host/exec/remote-execution-reply.js'
import { RemoteProtocolError } from '../../../src/host/refusals/refusal-errors.js'

const META = { exitCode: 0, timedOut: false, durationMs: 4 }

describe('parseCancellationAck', () => {
	it.each([
		['a cancelled, never-started run', { ok: true, state: 'cancelled', started: false }, true],
		[
			'a completed run with its result',
			{ ok: true, state: 'completed', started: true, result: META },
			true,
		],
		[
			'a failed run with its error',
			{ ok: true, state: 'failed', started: true, error: 'spawn' },
			true,
		],
		['a refusal', { ok: false, error: 'cancellation_unconfirmed' }, false],
		['an unknown state', { ok: true, state: 'running', started: true }, false],
		['a missing started flag', { ok: true, state: 'cancelled' }, false],
		[
			'a malformed result',
			{ ok: true, state: 'completed', started: true, result: { exitCode: 'x' } },
			false,
		],
		['not an object', 'ok', false],
	])('accepts only valid acknowledgements: %s', (_name, reply, valid) => {
		expect(parseCancellationAck(reply) !== undefined).toBe(valid)
	})
})

describe('parseTerminalMetadata', () => {
	it('keeps the signal and truncation flags and drops a null signal', () => {
		expect(parseTerminalMetadata({ ...META, signal: 'SIGKILL', stdoutTruncated: true })).toEqual({
			...META,
			signal: 'SIGKILL',
			stdoutTruncated: true,
		})
		expect(parseTerminalMetadata({ ...META, signal: null })).toEqual(META)
	})

	it.each([
		{ ...META, exitCode: 1.5 },
		{ ...META, timedOut: 'no' },
		{ ...META, durationMs: -1 },
		{ ...META, signal: 9 },
	])('rejects malformed metadata %j', (value) => {
		expect(parseTerminalMetadata(value)).toBeUndefined()
	})
})

describe('parseExecEvent', () => {
	it.each([
		[
			{ type: 'stdout_delta', data: 'a' },
			{ type: 'stdout_delta', data: 'a' },
		],
		[
			{ type: 'stderr_delta', data: 'b' },
			{ type: 'stderr_delta', data: 'b' },
		],
		[
			{ type: 'error', error: 'invalid_cwd' },
			{ type: 'error', error: 'invalid_cwd' },
		],
		[
			{ type: 'result', ...META, stdoutTruncated: false },
			{ type: 'result', ...META, stdoutTruncated: false },
		],
	])('reads %j', (event, expected) => {
		expect(parseExecEvent(event)).toEqual(expected)
	})

	it.each([{ type: 'stdout_delta' }, { type: 'result', exitCode: 0 }, { type: 'heartbeat' }, {}])(
		'refuses %j as a protocol error',
		(event) => {
			expect(() => parseExecEvent(event)).toThrow(RemoteProtocolError)
		},
	)
})
