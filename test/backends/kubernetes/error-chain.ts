// Finds an error of a given class in a rejection or along its `cause` chain: acquire failures may
// wrap the specific refusal (`KubernetesAcquireError.cause`), and a test asserts the specific one.

import { findCauseOfType } from '../../../src/contract/cause-chain.js'

export const findInChain = findCauseOfType

/** Awaits `promise`, expecting it to reject; resolves with the rejection and the elapsed time. */
export async function rejection(
	promise: Promise<unknown>,
): Promise<{ error: unknown; elapsedMs: number }> {
	const started = performance.now()
	try {
		await promise
	} catch (error) {
		return { error, elapsedMs: performance.now() - started }
	}
	throw new Error('expected a rejection, the call resolved')
}

/** Awaits `promise`, expecting it to reject; resolves with the rejection itself. */
export async function rejectionError(promise: Promise<unknown>): Promise<unknown> {
	return (await rejection(promise)).error
}
