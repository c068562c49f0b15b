/**
 * TLS terminated for a host with credentials: the guest's side is served with a leaf from the
 * sandbox's CA (ALPN `http/1.1` only), the upstream's certificate is verified for the name, and
 * the one request inside is read and checked like a plain one (`forwarded-request.ts`) before the
 * credential is set on it. The SNI equals the name already (the caller checked it), so the
 * credential goes out only when SNI, Host and any absolute target all name its host, and only
 * over a connection whose certificate verified; anything else is refused, never sent bare.
 */
import type { Socket } from 'node:net'
import { type Duplex, Duplex as DuplexStream, PassThrough } from 'node:stream'
import { TLSSocket, connect as tlsConnect } from 'node:tls'
import type { BridgeTarget } from './bridge-request.js'
import type { EgressCa } from './egress-ca.js'
import { MAX_TUNNEL_HEAD_BYTES } from './first-bytes.js'
import { forwardedRequest } from './forwarded-request.js'
import { RequestHeadReader } from './request-head.js'
import { readUntil } from './setup-read.js'
import { type FirstRequest, firstRequest, sendFirstRequest } from './tunnel-forwarding.js'
import { TunnelRefusal, withTimeout } from './tunnel-refusal.js'

export interface TerminationInput {
	readonly client: Socket
	/** The ClientHello and whatever came after it. */
	readonly hello: Buffer
	/** The upstream's TCP connection, dialed. */
	readonly upstream: Socket
	readonly target: Extract<BridgeTarget, { kind: 'name' }>
	readonly port: number
	readonly credentials: Readonly<Record<string, string>>
	readonly ca: EgressCa
	readonly upstreamCa?: readonly string[]
	readonly connectTimeoutMs: number
	/** The connection's head deadline. */
	readonly signal: AbortSignal
	/** Tracks a socket of this connection (ended with it). */
	own<T extends Duplex>(socket: T): T
}

export async function terminateTls(input: TerminationInput): Promise<void> {
	const guestSide = serveGuestTls(input)
	const upstream = connectUpstreamTls(input)
	const first = await readTerminatedRequest(guestSide, input)
	// Credentials go out only over a connection whose certificate verified for this name.
	await upstream.verified
	sendFirstRequest(guestSide, upstream.socket, first)
}

/** The guest's side: TLS served over the client's bytes, the ClientHello first. */
function serveGuestTls(input: TerminationInput): TLSSocket {
	const inbound = new PassThrough()
	inbound.write(input.hello)
	input.client.pipe(inbound)
	const plain = DuplexStream.from({ readable: inbound, writable: input.client })
	const leaf = input.ca.leafFor(input.target.name)
	return input.own(
		new TLSSocket(plain, {
			isServer: true,
			key: leaf.key,
			cert: leaf.cert,
			ALPNProtocols: ['http/1.1'],
		}),
	)
}

function connectUpstreamTls(input: TerminationInput): {
	socket: TLSSocket
	verified: Promise<void>
} {
	const socket = input.own(
		tlsConnect({
			socket: input.upstream,
			servername: input.target.name,
			ALPNProtocols: ['http/1.1'],
			...(input.upstreamCa ? { ca: [...input.upstreamCa] } : {}),
		}),
	)
	const verified = withTimeout(
		new Promise<void>((resolve, reject) => {
			socket.once('secureConnect', () => resolve())
			socket.once('error', () => reject(new TunnelRefusal('sni', 'upstream-certificate-refused')))
		}),
		input.connectTimeoutMs,
		'sni',
		'upstream-timeout',
		input.signal,
	)
	verified.catch(() => undefined)
	return { socket, verified }
}

/** The one request inside, read and checked with the credentials it will carry. */
async function readTerminatedRequest(
	guestSide: TLSSocket,
	input: TerminationInput,
): Promise<FirstRequest> {
	const read = await readUntil(guestSide, new RequestHeadReader(MAX_TUNNEL_HEAD_BYTES), {
		signal: input.signal,
		layer: 'http',
	})
	if (read.kind === 'invalid') throw new TunnelRefusal('http', `http-${read.reason}`)
	const verdict = forwardedRequest(read.head, {
		target: input.target,
		port: input.port,
		credentials: input.credentials,
	})
	if (!verdict.allowed) throw new TunnelRefusal(verdict.layer, verdict.reason)
	return firstRequest(verdict, read.rest)
}
