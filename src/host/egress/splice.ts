/**
 * A tunnel's two ends joined both ways once its first bytes passed their checks; either end's
 * close or error ends the other, so no half of a tunnel outlives its peer.
 */
import type { Duplex } from 'node:stream'
import type { FirstRequestOnly } from './first-request-only.js'

/** `client` and `upstream` joined both ways (the client's bytes through `through` when given;
 * `upstreamPiped` when the upstream's bytes already flow to the client). */
export function splice(
	client: Duplex,
	upstream: Duplex,
	upstreamPiped = false,
	through?: FirstRequestOnly,
): void {
	if (through) client.pipe(through).pipe(upstream)
	else client.pipe(upstream)
	if (!upstreamPiped) upstream.pipe(client)
	const end = () => {
		client.destroy()
		upstream.destroy()
	}
	through?.once('error', end)
	for (const side of [client, upstream]) {
		side.once('error', end)
		side.once('close', end)
	}
}
