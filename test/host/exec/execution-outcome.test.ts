/**
 * The one decision both exec paths make from what they observed (pure): every branch of
 * decideExecutionOutcome, as a table of facts → outcome.
 */
import { describe, expect, it } from 'vitest'
import {
	decideExecutionOutcome,
	type ExecutionDecision,
	type ExecutionFacts,
} from '../../../src/host/exec/execution-outcome.js'
import type { RemoteCancellationAcknowledgement } from '../../../src/host/exec/remote-execution-messages.js'
import { RemoteCommandError } from '../../../src/host/refusals/refusal-errors.js'

const RAN = { exitCode: 3, timedOut: false, durationMs: 7 }
const ACK_RESULT = { exitCode: -1, signal: 'SIGTERM', timedOut: false, durationMs: 9 }
const commandError = new RemoteCommandError('invalid_cwd: /nope')
const lost = new Error('connection reset')
const unknown = new Error('no cancellation was acknowledged')

function ack(
	state: RemoteCancellationAcknowledgement['state'],
	started: boolean,
	withResult = false,
): { kind: 'confirmed'; ack: RemoteCancellationAcknowledgement } {
	return {
		kind: 'confirmed',
		ack: { ok: true, state, started, ...(withResult ? { result: ACK_RESULT } : {}) },
	}
}

const ran = (cancelled = false) => ({ kind: 'ran', metadata: RAN, cancelled }) as const

const cases: ReadonlyArray<readonly [string, ExecutionFacts, ExecutionDecision]> = [
	// ---- the execution settled first ----
	[
		'a run that finished on its own is completed',
		{ first: 'execution', execution: ran(), callerAborted: false },
		{ kind: 'completed', metadata: RAN },
	],
	[
		'a finished run the caller aborted meanwhile is aborted, timed by the call',
		{ first: 'execution', execution: ran(), callerAborted: true },
		{ kind: 'aborted', metadata: RAN, durationFrom: 'call' },
	],
	[
		'a run the guest says a cancel ended is aborted, timed by the guest',
		{ first: 'execution', execution: ran(true), callerAborted: false },
		{ kind: 'aborted', metadata: RAN, durationFrom: 'guest' },
	],
	[
		'a run the guest reports cancelled before it started never started',
		{ first: 'execution', execution: { kind: 'never-started' }, callerAborted: false },
		{ kind: 'never-started' },
	],
	[
		'a failed stream without a reconciling cancellation fails with its error',
		{ first: 'execution', execution: { kind: 'failed', error: lost }, callerAborted: false },
		{ kind: 'failed', error: lost },
	],
	[
		'a failed stream whose reconciling cancellation is unknown fails with that',
		{
			first: 'execution',
			execution: { kind: 'failed', error: lost },
			cancellation: { kind: 'unknown', error: unknown },
			callerAborted: false,
		},
		{ kind: 'failed', error: unknown },
	],
	[
		'a guest error the acknowledgement confirms as failed is rethrown',
		{
			first: 'execution',
			execution: { kind: 'failed', error: commandError },
			cancellation: ack('failed', false),
			callerAborted: false,
		},
		{ kind: 'failed', error: commandError },
	],
	[
		'a failed stream of a started run the caller aborted is aborted with the ack result',
		{
			first: 'execution',
			execution: { kind: 'failed', error: lost },
			cancellation: ack('cancelled', true, true),
			callerAborted: true,
		},
		{ kind: 'aborted', metadata: ACK_RESULT, durationFrom: 'call' },
	],
	[
		'a failed stream of a never-started run the caller aborted never started',
		{
			first: 'execution',
			execution: { kind: 'failed', error: lost },
			cancellation: ack('cancelled', false),
			callerAborted: true,
		},
		{ kind: 'never-started' },
	],
	[
		'a failed stream the acknowledgement proves never started fails with its error',
		{
			first: 'execution',
			execution: { kind: 'failed', error: lost },
			cancellation: ack('cancelled', false),
			callerAborted: false,
		},
		{ kind: 'failed', error: lost },
	],
	[
		'a failed stream of a started run is incomplete: its result was lost',
		{
			first: 'execution',
			execution: { kind: 'failed', error: lost },
			cancellation: ack('completed', true),
			callerAborted: false,
		},
		{ kind: 'incomplete', ack: ack('completed', true).ack, stage: 'lost-result', cause: lost },
	],
	// ---- a cancellation settled first ----
	[
		'an unknown cancellation fails with its error',
		{
			first: 'cancellation',
			cancellation: { kind: 'unknown', error: unknown },
			reason: 'caller',
			callerAborted: true,
		},
		{ kind: 'failed', error: unknown },
	],
	[
		'the caller cancelled a run that never started',
		{
			first: 'cancellation',
			cancellation: ack('cancelled', false),
			reason: 'caller',
			callerAborted: true,
		},
		{ kind: 'never-started' },
	],
	[
		'the observation deadline cancelled a run that never started: timed out',
		{
			first: 'cancellation',
			cancellation: ack('cancelled', false, true),
			reason: 'observation-timeout',
			callerAborted: false,
		},
		{ kind: 'timed-out', metadata: ACK_RESULT },
	],
	[
		'the caller cancelled a started run whose result drained: aborted with it',
		{
			first: 'cancellation',
			cancellation: ack('cancelled', true, true),
			reason: 'caller',
			execution: ran(true),
			callerAborted: true,
		},
		{ kind: 'aborted', metadata: RAN, durationFrom: 'call' },
	],
	[
		'the deadline cancelled a started run whose result drained: timed out with it',
		{
			first: 'cancellation',
			cancellation: ack('cancelled', true),
			reason: 'observation-timeout',
			execution: ran(),
			callerAborted: false,
		},
		{ kind: 'timed-out', metadata: RAN },
	],
	[
		'a drained result after a reconciling cancellation is completed',
		{
			first: 'cancellation',
			cancellation: ack('completed', true),
			reason: 'reconcile',
			execution: ran(),
			callerAborted: false,
		},
		{ kind: 'completed', metadata: RAN },
	],
	[
		'the caller cancelled a started run that never drained: aborted with the ack result',
		{
			first: 'cancellation',
			cancellation: ack('cancelled', true, true),
			reason: 'caller',
			callerAborted: true,
		},
		{ kind: 'aborted', metadata: ACK_RESULT, durationFrom: 'call' },
	],
	[
		'a drained guest error the acknowledgement confirms as failed is rethrown',
		{
			first: 'cancellation',
			cancellation: ack('failed', true),
			reason: 'observation-timeout',
			execution: { kind: 'failed', error: commandError },
			callerAborted: false,
		},
		{ kind: 'failed', error: commandError },
	],
	[
		'the deadline cancelled a started run that never drained: timed out with the ack result',
		{
			first: 'cancellation',
			cancellation: ack('cancelled', true, true),
			reason: 'observation-timeout',
			callerAborted: false,
		},
		{ kind: 'timed-out', metadata: ACK_RESULT },
	],
	[
		'a confirmed, started run whose result did not drain is incomplete',
		{
			first: 'cancellation',
			cancellation: ack('completed', true),
			reason: 'observation-timeout',
			callerAborted: false,
		},
		{ kind: 'incomplete', ack: ack('completed', true).ack, stage: 'drain-expired' },
	],
	[
		'an incomplete run keeps the drained failure as its cause',
		{
			first: 'cancellation',
			cancellation: ack('completed', true),
			reason: 'observation-timeout',
			execution: { kind: 'failed', error: lost },
			callerAborted: false,
		},
		{ kind: 'incomplete', ack: ack('completed', true).ack, stage: 'drain-expired', cause: lost },
	],
]

describe('decideExecutionOutcome', () => {
	it.each(cases)('%s', (_name, facts, expected) => {
		expect(decideExecutionOutcome(facts)).toEqual(expected)
	})

	it('reaches every outcome kind', () => {
		const kinds = new Set(cases.map(([, facts]) => decideExecutionOutcome(facts).kind))
		expect([...kinds].sort()).toEqual([
			'aborted',
			'completed',
			'failed',
			'incomplete',
			'never-started',
			'timed-out',
		])
	})
})
