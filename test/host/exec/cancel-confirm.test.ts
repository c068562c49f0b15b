/**
 * The one cancel-confirm loop against scripted replies (a recording fake pins the attempt
 * sequence): the plain path retries every refusal for the whole window, the by-id path ends at once
 * on the refusals the table names, and both give up with RemoteCancellationUnknownError.
 */
import { describe, expect, it } from 'vitest'
import { confirmCancellation } from '../../../src/host/exec/cancel-confirm.js'
import {
	ExecutionCancelRefusedError,
	RemoteCancellationUnknownError,
	RemoteProtocolError,
} from '../../../src/host/refusals/refusal-errors.js'

const ID = 'exec_0b6f3c2e-6a51-4c0e-9d55-8f1f3e3b6a10'
const ACK = { ok: true, state: 'cancelled', started: true }

function scripted(replies: readonly unknown[]): {
	cancel: () => Promise<unknown>
	attempts: () => number
} {
	let attempts = 0
	return {
		cancel: async () => {
			const reply = replies[Math.min(attempts, replies.length - 1)]
			attempts++
			if (reply instanceof Error) throw reply
			return reply
		},
		attempts: () => attempts,
	}
}

function confirm(
	cancel: () => Promise<unknown>,
	refusals: 'retry' | 'by-id',
	signal?: AbortSignal,
): Promise<unknown> {
	return confirmCancellation({
		executionId: ID,
		cancel,
		controlRequestTimeoutMs: 100,
		cancelConfirmTimeoutMs: 300,
		refusals,
		...(signal ? { signal } : {}),
	})
}

describe('confirmCancellation', () => {
	it('returns the first valid acknowledgement, after refusals and failed attempts', async () => {
		const script = scripted([
			{ ok: false, error: 'unknown_execution' },
			new Error('connection reset'),
			ACK,
		])
		await expect(confirm(script.cancel, 'retry')).resolves.toEqual(ACK)
		expect(script.attempts()).toBe(3)
	})

	it.each([
		['unknown_execution', ExecutionCancelRefusedError],
		['invalid_execution_id', ExecutionCancelRefusedError],
		['cancellation_unconfirmed', RemoteCancellationUnknownError],
	])('by id, %s ends the attempts at once with its named error', async (code, kind) => {
		const script = scripted([{ ok: false, error: code, message: 'detail' }])
		const error = await confirm(script.cancel, 'by-id').catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(kind)
		expect(error).toMatchObject({ executionId: ID })
		expect(script.attempts()).toBe(1)
	})

	it.each(['unknown_execution', 'cancellation_unconfirmed', 'unauthorized', 'unexpected'])(
		'retrying, %s is tried again until the window ends, then the outcome is unknown',
		async (code) => {
			const script = scripted([{ ok: false, error: code }])
			const error = await confirm(script.cancel, 'retry').catch((caught: unknown) => caught)
			expect(error).toBeInstanceOf(RemoteCancellationUnknownError)
			expect((error as Error).message).toMatch(/no cancellation was acknowledged within 300 ms/)
			expect((error as Error).cause).toBeInstanceOf(RemoteProtocolError)
			expect(script.attempts()).toBeGreaterThan(1)
		},
	)

	it('by id, a refusal the table does not name is retried like any other', async () => {
		const script = scripted([{ ok: false, error: 'agent_retiring' }, ACK])
		await expect(confirm(script.cancel, 'by-id')).resolves.toEqual(ACK)
		expect(script.attempts()).toBe(2)
	})

	it('by id, the caller abort ends the attempts with its reason', async () => {
		const caller = new AbortController()
		const script = scripted([new Error('connection reset')])
		setTimeout(() => caller.abort(new Error('caller gave up')), 30)
		await expect(confirm(script.cancel, 'by-id', caller.signal)).rejects.toThrow('caller gave up')
	})
})
