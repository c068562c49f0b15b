/**
 * A tunnel's two ends joined both ways — the egress bridge's, on both sides of it (the guest's
 * capture helper and the host's proxy). A clean close of one end ENDS the other, so bytes it still
 * holds for a slow reader are flushed before it goes (destroying it would cut a download's tail);
 * an error on either end destroys both at once. An end whose peer never closes after that is
 * destroyed after a bounded linger, so no half of a tunnel outlives its peer for long.
 */
import type { Duplex } from 'node:stream'

/** How long an ended side may wait for its peer to close before it is destroyed. */
export const TUNNEL_LINGER_MS = 10_000

export interface TunnelSpliceOptions {
	/** The upstream's bytes already flow to the client (piped before the splice). */
	readonly upstreamPiped?: boolean
	/** A stream the client's bytes pass through on their way upstream. */
	readonly through?: Duplex
	readonly lingerMs?: number
}

/** Ends `side`'s writable half (through `entry` when its bytes arrive through a pipe), and
 * destroys it if it has not closed within `lingerMs`. */
function endAfterPeer(side: Duplex, entry: Duplex, lingerMs: number): void {
	if (side.destroyed) return
	const timer = setTimeout(() => side.destroy(), lingerMs)
	timer.unref()
	side.once('close', () => clearTimeout(timer))
	if (!entry.writableEnded) entry.end()
}

export function spliceTunnel(
	client: Duplex,
	upstream: Duplex,
	options: TunnelSpliceOptions = {},
): void {
	const { through, lingerMs = TUNNEL_LINGER_MS } = options
	if (through) client.pipe(through).pipe(upstream)
	else client.pipe(upstream)
	if (!options.upstreamPiped) upstream.pipe(client)
	const abort = () => {
		client.destroy()
		upstream.destroy()
		through?.destroy()
	}
	through?.once('error', abort)
	client.once('error', abort)
	upstream.once('error', abort)
	client.once('close', () => endAfterPeer(upstream, through ?? upstream, lingerMs))
	upstream.once('close', () => endAfterPeer(client, client, lingerMs))
}
