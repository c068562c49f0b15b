/**
 * One `CONNECT` through the proxy, as named steps: the route (rule → the proxy's own resolution →
 * an address outside the deny set), the `200`, the dial, then by the rule: on a `tcp://` port the
 * bytes pass as sent; on every other port the client's first bytes are read and checked before
 * anything reaches the upstream — TLS by its SNI (terminated when the name has credentials), HTTP
 * by `forwarded-request.ts` — and anything else is refused. Every step throws a `TunnelRefusal`;
 * reporting it is the caller's.
 */
import { connect as netConnect, type Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { type EgressRule, ownAddressesOf } from './allowed-hosts.js'
import type { BridgeRequest } from './bridge-request.js'
import type { EgressCa } from './egress-ca.js'
import { credentialHeadersFor, type EgressCredential } from './egress-credentials.js'
import {
	chooseAddress,
	decideConnect,
	decideServerName,
	type EgressLayer,
} from './egress-decision.js'
import { type FirstBytes, FirstBytesReader } from './first-bytes.js'
import { forwardedRequest } from './forwarded-request.js'
import { type IpAddress, ipAddressText, parseIpAddress } from './ip-address.js'
import { readUntil } from './setup-read.js'
import { terminateTls } from './tls-termination.js'
import { firstRequest, forwardAsSent, sendFirstRequest } from './tunnel-forwarding.js'
import { asRefusal, TunnelRefusal, withTimeout } from './tunnel-refusal.js'

/** Resolves a name to addresses (the proxy's own resolution; a test replaces it). */
export type EgressLookup = (name: string) => Promise<readonly string[]>

/** What every tunnel of one proxy is decided by. */
export interface TunnelSettings {
	readonly rules: readonly EgressRule[]
	readonly credentials: readonly EgressCredential[]
	readonly hostAddresses: readonly IpAddress[]
	readonly lookup: EgressLookup
	readonly connectTimeoutMs: number
	/** Present when there are credentials. */
	readonly ca?: EgressCa
	readonly upstreamCa?: readonly string[]
}

/** One connection on the proxy's socket. */
export interface TunnelScope {
	readonly client: Socket
	/** The head deadline (and the proxy's close). */
	readonly signal: AbortSignal
	/** Tracks a socket of this connection: ended with it. */
	own<T extends Duplex>(socket: T): T
}

export type ConnectRequest = Extract<BridgeRequest, { kind: 'connect' }>

/** What is reported of a tunnel that opened. */
export interface OpenedTunnel {
	readonly layer: EgressLayer
	readonly address: string
	readonly rule?: string
}

interface Route {
	readonly address: IpAddress
	readonly text: string
	readonly rule?: EgressRule
}

export async function openTunnel(
	settings: TunnelSettings,
	scope: TunnelScope,
	request: ConnectRequest,
	rest: Buffer,
): Promise<OpenedTunnel> {
	const route = await routeOf(settings, request, scope.signal)
	try {
		scope.client.write('HTTP/1.1 200 Connection Established\r\n\r\n')
		// Dialed at once, beside the read of the first bytes; nothing of the client's reaches it
		// before they passed.
		const dialing = dial(route, request.port, settings.connectTimeoutMs, scope)
		const layer = route.rule?.raw
			? await forwardRaw(scope, dialing, rest)
			: await forwardChecked(settings, scope, request, { rest, dialing })
		return { layer, address: route.text, ...(route.rule ? { rule: route.rule.entry } : {}) }
	} catch (error) {
		throw asRefusal(error, route.text)
	}
}

/** The rule that allows the target, and the address (resolved here) that may be dialed. */
async function routeOf(
	settings: TunnelSettings,
	request: ConnectRequest,
	signal: AbortSignal,
): Promise<Route> {
	const { target, port } = request
	const verdict = decideConnect(settings.rules, target, port)
	if (!verdict.allowed) throw new TunnelRefusal('connect', verdict.reason)
	const texts =
		target.kind === 'address'
			? [target.text]
			: (ownAddressesOf(target.name) ??
				(await withTimeout(
					settings.lookup(target.name),
					settings.connectTimeoutMs,
					'ip',
					'resolve-timeout',
					signal,
				).catch((error: unknown) => {
					throw error instanceof TunnelRefusal ? error : new TunnelRefusal('ip', 'unresolved')
				})))
	const addresses = texts.flatMap((text) => parseIpAddress(text) ?? [])
	const choice = chooseAddress(settings.rules, settings.hostAddresses, addresses, port)
	if (!choice.allowed) {
		throw new TunnelRefusal('ip', choice.reason, choice.address && ipAddressText(choice.address))
	}
	const rule = verdict.rule ?? choice.rule
	return { address: choice.address, text: ipAddressText(choice.address), ...(rule ? { rule } : {}) }
}

function dial(route: Route, port: number, timeoutMs: number, scope: TunnelScope): Promise<Socket> {
	const dialing = withTimeout(
		new Promise<Socket>((resolve, reject) => {
			const socket = scope.own(netConnect({ host: route.text, port }))
			socket.once('connect', () => resolve(socket))
			socket.once('error', () => reject(new TunnelRefusal('ip', 'upstream-unreachable')))
		}),
		timeoutMs,
		'ip',
		'upstream-timeout',
		scope.signal,
	)
	// Observed by whichever step waits for it; a refusal elsewhere must not leave it unobserved.
	dialing.catch(() => undefined)
	return dialing
}

/** A `tcp://` port: what the client sent and sends, as sent. */
async function forwardRaw(
	scope: TunnelScope,
	dialing: Promise<Socket>,
	rest: Buffer,
): Promise<EgressLayer> {
	forwardAsSent(scope.client, await dialing, rest)
	return 'ip'
}

/** Every other port: TLS or one HTTP request, checked; anything else refused. */
async function forwardChecked(
	settings: TunnelSettings,
	scope: TunnelScope,
	request: ConnectRequest,
	pending: { readonly rest: Buffer; readonly dialing: Promise<Socket> },
): Promise<EgressLayer> {
	const upstreamFirst = refuseServerFirst(pending.dialing)
	const first = await Promise.race([
		readUntil(scope.client, new FirstBytesReader(), {
			first: pending.rest,
			signal: scope.signal,
			layer: 'http',
		}),
		upstreamFirst.refused,
	]).finally(upstreamFirst.stop)
	if (first.kind === 'invalid') throw new TunnelRefusal(first.layer, first.reason)
	const credentials =
		request.target.kind === 'name'
			? credentialHeadersFor(settings.credentials, request.target.name)
			: undefined
	if (first.kind === 'tls') {
		await forwardTls(settings, scope, request, { first, credentials, dialing: pending.dialing })
		return 'sni'
	}
	const verdict = forwardedRequest(first.head, {
		target: request.target,
		port: request.port,
		...(credentials ? { credentials } : {}),
	})
	if (!verdict.allowed) throw new TunnelRefusal(verdict.layer, verdict.reason)
	const checked = firstRequest(verdict, first.early)
	sendFirstRequest(scope.client, await pending.dialing, checked)
	return 'host'
}

/**
 * Refused when the dial fails, or when the upstream speaks before the client's first bytes are in:
 * an HTTP or TLS server never does, so a server-first protocol (a database, SSH) on a port without
 * `tcp://` is refused at once, by name, rather than at the head deadline.
 */
function refuseServerFirst(dialing: Promise<Socket>): {
	readonly refused: Promise<never>
	readonly stop: () => void
} {
	let stopped = false
	let detach = () => undefined
	const refused = dialing.then(
		(upstream) =>
			new Promise<never>((_, reject) => {
				if (stopped) return
				const onData = () => reject(new TunnelRefusal('http', 'upstream-spoke-first'))
				upstream.once('data', onData)
				detach = () => {
					upstream.off('data', onData)
					// Back to paused: what arrives now waits in its buffer for the splice.
					upstream.pause()
				}
			}),
	)
	return {
		refused,
		stop: () => {
			stopped = true
			detach()
		},
	}
}

async function forwardTls(
	settings: TunnelSettings,
	scope: TunnelScope,
	request: ConnectRequest,
	tls: {
		readonly first: Extract<FirstBytes, { kind: 'tls' }>
		readonly credentials: Readonly<Record<string, string>> | undefined
		readonly dialing: Promise<Socket>
	},
): Promise<void> {
	const verdict = decideServerName(request.target, tls.first.serverName)
	if (!verdict.allowed) throw new TunnelRefusal('sni', verdict.reason)
	const upstream = await tls.dialing
	const { target } = request
	if (tls.credentials === undefined || settings.ca === undefined || target.kind !== 'name') {
		forwardAsSent(scope.client, upstream, tls.first.bytes)
		return
	}
	await terminateTls({
		client: scope.client,
		hello: tls.first.bytes,
		upstream,
		target,
		port: request.port,
		credentials: tls.credentials,
		ca: settings.ca,
		connectTimeoutMs: settings.connectTimeoutMs,
		signal: scope.signal,
		own: scope.own,
		...(settings.upstreamCa ? { upstreamCa: settings.upstreamCa } : {}),
	})
}
