/**
 * A plain HTTP upgrade (WebSocket) through a name-target tunnel: which requests ask to switch
 * protocols, and the upstream's answer that decides whether anything after the request may pass
 * (`first-request-only.ts`). Only a `101` lets it; any other answer, a malformed one, or the
 * upstream ending first seals the tunnel to the one request, as for every plain request.
 */
import type { Readable } from 'node:stream'
import type { FirstRequestOnly } from './first-request-only.js'
import { headerValues, type RequestHead } from './request-head.js'

/** A status line longer than this is not one a server sends: the answer is read as a refusal. */
const MAX_STATUS_LINE_BYTES = 1024
const STATUS_LINE = /^HTTP\/1\.[01] ([1-5][0-9]{2})(?: [\t\x20-\x7e\x80-\xff]*)?$/

/** An `Upgrade` field and the `upgrade` token among `Connection`'s: a request to switch. */
export function isUpgradeRequest(head: RequestHead): boolean {
	if (headerValues(head, 'upgrade').length === 0) return false
	return headerValues(head, 'connection').some((value) =>
		value.split(',').some((token) => token.trim().toLowerCase() === 'upgrade'),
	)
}

export type StatusRead = number | 'incomplete' | 'invalid'

/** The status code of the response whose first bytes are `bytes`. */
export function responseStatusOf(bytes: Buffer): StatusRead {
	const end = bytes.indexOf('\r\n', 0, 'latin1')
	if (end < 0) return bytes.length >= MAX_STATUS_LINE_BYTES ? 'invalid' : 'incomplete'
	if (end > MAX_STATUS_LINE_BYTES) return 'invalid'
	const match = STATUS_LINE.exec(bytes.subarray(0, end).toString('latin1'))
	return match?.[1] === undefined ? 'invalid' : Number(match[1])
}

/**
 * Reads the upstream's status line beside the pipe that carries it to the client, and releases
 * `through` on `101`, seals it otherwise. Attach before the request is written.
 */
export function answerUpgradeOn(upstream: Readable, through: FirstRequestOnly): void {
	let seen = Buffer.alloc(0)
	const settle = (status: StatusRead | 'ended') => {
		upstream.off('data', onData)
		upstream.off('close', onEnd)
		if (status === 101) through.release()
		else through.seal()
	}
	const onData = (chunk: Buffer) => {
		seen = Buffer.concat([seen, chunk]).subarray(0, MAX_STATUS_LINE_BYTES + 2)
		const status = responseStatusOf(seen)
		if (status !== 'incomplete') settle(status)
	}
	const onEnd = () => settle('ended')
	upstream.on('data', onData)
	upstream.once('close', onEnd)
}
