/**
 * How a tunnel's bytes go upstream once its checks passed: as sent (a `tcp://` port, or TLS the
 * proxy does not terminate), or as one HTTP request — the checked, rewritten head, then exactly
 * that request's body (`first-request-only.ts`), with an upgrade's later bytes held for the
 * upstream's answer (`http-upgrade.ts`). Both end in `spliceTunnel`.
 */
import type { Duplex } from 'node:stream'
import { spliceTunnel } from '../../wire/tunnel-splice.js'
import { type FirstRequestOnly, firstRequestOf } from './first-request-only.js'
import type { ForwardVerdict } from './forwarded-request.js'
import { answerUpgradeOn } from './http-upgrade.js'
import { TunnelRefusal } from './tunnel-refusal.js'

export type ForwardedRequest = Extract<ForwardVerdict, { allowed: true }>

/** The first request's body bytes that came with the head, and the stream for the rest of it. */
export interface FirstRequest {
	readonly request: ForwardedRequest
	readonly early: Buffer
	readonly rest: FirstRequestOnly
}

/** `bytes` (what the client sent so far) and everything after, both ways, unread. */
export function forwardAsSent(client: Duplex, upstream: Duplex, bytes: Buffer): void {
	if (bytes.length > 0) upstream.write(bytes)
	spliceTunnel(client, upstream)
}

/** The body bytes behind the head, judged by the request's framing before anything is sent. */
export function firstRequest(request: ForwardedRequest, early: Buffer): FirstRequest {
	const first = firstRequestOf(request.framing, early, request.upgrade)
	if (first instanceof Error) throw new TunnelRefusal('http', 'http-body-framing-invalid')
	return { request, early: first.early, rest: first.rest }
}

/** Sends the rewritten head and its body; joins the two sides through the first-request stream. */
export function sendFirstRequest(client: Duplex, upstream: Duplex, first: FirstRequest): void {
	if (first.request.upgrade) answerUpgradeOn(upstream, first.rest)
	upstream.write(first.request.head)
	if (first.early.length > 0) upstream.write(first.early)
	spliceTunnel(client, upstream, { through: first.rest })
}
