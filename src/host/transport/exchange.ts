/**
 * The two reply disciplines of the agent wire, enforced on a `FrameChannel`. Request-shaped: exactly
 * one frame, no trailing bytes, and the peer closes within `POST_RESPONSE_CLOSE_TIMEOUT_MS`; the
 * call resolves on that close. Stream-shaped: event frames, the zero-length terminator, nothing
 * after it, then the same close. A long-lived two-way op opens with its `ready` frame. Anything
 * else is a `RemoteProtocolError`.
 */

import { isExecutionState } from '../../wire/protocol.js'
import { parseRefusal, type WireRefusal } from '../../wire/refusals.js'
import { RemoteProtocolError } from '../refusals/refusal-errors.js'
import { refusalToError } from '../refusals/refusal-to-error.js'
import { POST_RESPONSE_CLOSE_TIMEOUT_MS } from './agent-transport-options.js'
import type { FrameChannel } from './frame-channel.js'

/** Waits for the peer to close after its last frame; extra frames or silence are violations. */
export async function expectPeerClose(channel: FrameChannel): Promise<void> {
	const next = await channel.read(POST_RESPONSE_CLOSE_TIMEOUT_MS)
	if (next.kind === 'closed') {
		// A reset after a complete answer loses nothing; stray bytes or bad framing do.
		if (next.error instanceof RemoteProtocolError) throw next.error
		return
	}
	channel.destroy()
	if (next.kind === 'timeout') {
		throw new RemoteProtocolError(
			`${channel.op}: the guest did not close the connection within ${POST_RESPONSE_CLOSE_TIMEOUT_MS} ms of its answer`,
		)
	}
	throw new RemoteProtocolError(
		`${channel.op}: the guest sent ${next.kind === 'end' ? 'a terminator' : 'another frame'} after its answer`,
	)
}

function closedError(channel: FrameChannel, error: Error | undefined, what: string): Error {
	return error ?? new RemoteProtocolError(`${channel.op}: the guest closed the connection ${what}`)
}

/** Reads the one reply frame of a request-shaped op. */
export async function readSingleReply(channel: FrameChannel): Promise<Record<string, unknown>> {
	const first = await channel.read()
	if (first.kind === 'closed') throw closedError(channel, first.error, 'without replying')
	if (first.kind !== 'frame') {
		channel.destroy()
		throw new RemoteProtocolError(`${channel.op}: expected one reply frame, got a terminator`)
	}
	await expectPeerClose(channel)
	return first.message
}

/**
 * Reads the first frame of a long-lived two-way op (terminal, tcp-connect, attach-session): its
 * `ready`. A refusal before it becomes `mapRefusal(refusal)`, default the op's refusal error.
 */
export async function readStreamReady(
	channel: FrameChannel,
	mapRefusal?: (refusal: WireRefusal) => Error,
): Promise<Record<string, unknown>> {
	const op = channel.op
	const first = await channel.read()
	if (first.kind === 'closed') {
		throw (
			first.error ?? new RemoteProtocolError(`${op}: the guest closed the connection before ready`)
		)
	}
	if (first.kind !== 'frame') throw new RemoteProtocolError(`${op}: stream ended before ready`)
	const refusal = streamRefusalOf(first.message)
	if (refusal !== undefined) throw mapRefusal?.(refusal) ?? refusalError(op, refusal)
	if (first.message.type !== 'ready') {
		throw new RemoteProtocolError(`${op}: expected ready, got ${String(first.message.type)}`)
	}
	return first.message
}

/** Yields each event of a stream-shaped op until its terminator, then checks the close. */
export async function* readStreamEvents(
	channel: FrameChannel,
): AsyncGenerator<Record<string, unknown>, void, undefined> {
	try {
		for (;;) {
			const item = await channel.read()
			if (item.kind === 'frame') {
				yield item.message
				continue
			}
			if (item.kind === 'end') {
				await expectPeerClose(channel)
				return
			}
			if (item.kind === 'closed') {
				throw closedError(channel, item.error, 'before the stream terminator')
			}
		}
	} finally {
		// An early `return()` by the consumer (break, abort) must not leave the transfer running.
		if (!channel.isClosed) channel.destroy()
	}
}

/** A refusal message read into its code and the fields a refusal may carry beside `error`. */
export function readRefusal(message: Record<string, unknown>): WireRefusal {
	const { error, executionState, nextOffset, pid } = message
	return parseRefusal(typeof error === 'string' ? error : 'unspecified refusal', {
		...(typeof message.message === 'string' ? { message: message.message } : {}),
		...(isExecutionState(executionState) ? { executionState } : {}),
		...(typeof nextOffset === 'number' && Number.isFinite(nextOffset) ? { nextOffset } : {}),
		...(typeof pid === 'number' && Number.isFinite(pid) ? { pid } : {}),
	})
}

/** The guest's refusal when `message` is `{ ok: false, error }`. */
export function refusalOf(message: Record<string, unknown>): WireRefusal | undefined {
	return message.ok === false ? readRefusal(message) : undefined
}

/** A stream's refusal: a request-shaped `{ ok: false }` or a stream `{ type: 'error' }` event. */
export function streamRefusalOf(message: Record<string, unknown>): WireRefusal | undefined {
	if (message.ok === false || message.type === 'error') return readRefusal(message)
	return undefined
}

/** The error for a guest refusal of `op` that no verb names more precisely. */
export function refusalError(op: string, refusal: WireRefusal): Error {
	return refusalToError('op', refusal, { op })
}
