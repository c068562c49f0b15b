/**
 * The host's egress proxy for one sandbox: a server on a unix socket the guest's capture helper
 * (or the workload itself — it is all untrusted) sends `CONNECT host:port` and `RESOLVE name` to.
 * Every decision is made here, from the request alone (`egress-tunnel.ts` for a tunnel's steps).
 * Each connection is bounded: it must be admitted under the sandbox's and the host's tunnel caps,
 * finish its setup (the bridge request and, but on a `tcp://` port, the first request head or
 * ClientHello) within the head timeout however it trickles, and once open it is closed after the
 * idle timeout without a byte either way. One decision is reported per connection; `close()` ends
 * every connection and removes the socket.
 */
import { lookup as dnsLookup } from 'node:dns/promises'
import { chmod, unlink } from 'node:fs/promises'
import { createServer, type Server, type Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { MAX_BRIDGE_HEAD_BYTES } from '../../wire/egress-bridge.js'
import { TUNNEL_LINGER_MS } from '../../wire/tunnel-splice.js'
import type { EgressRule } from './allowed-hosts.js'
import { type BridgeRequest, bridgeRequestOf } from './bridge-request.js'
import { createEgressCa } from './egress-ca.js'
import type { EgressCredential } from './egress-credentials.js'
import { decideResolve, type EgressDecision, targetText } from './egress-decision.js'
import {
	type EgressLookup,
	type OpenedTunnel,
	openTunnel,
	type TunnelScope,
	type TunnelSettings,
} from './egress-tunnel.js'
import type { IpAddress } from './ip-address.js'
import { RequestHeadReader } from './request-head.js'
import { readUntil } from './setup-read.js'
import { DEFAULT_MAX_TUNNELS, HOST_TUNNEL_BUDGET, TunnelBudget } from './tunnel-budget.js'
import { asRefusal, TunnelRefusal } from './tunnel-refusal.js'

export type { EgressLookup } from './egress-tunnel.js'

/** From a connection's arrival to its tunnel open (or its RESOLVE answered), however it trickles. */
export const DEFAULT_HEAD_TIMEOUT_MS = 30_000
/** An open tunnel with no byte either way for this long is closed. */
export const DEFAULT_IDLE_TIMEOUT_MS = 10 * 60_000
/** Resolving and dialing the upstream, and its TLS handshake when terminated. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000
/** How long a refused client may take to read its `403` before it is cut. */
const REFUSAL_LINGER_MS = 1000

export interface EgressProxyOptions {
	/** Where the server listens (created here, mode 0666: the sandbox uid must reach it). */
	readonly socketPath: string
	readonly rules: readonly EgressRule[]
	readonly credentials?: readonly EgressCredential[]
	/** Called once per verdict; a throwing callback is ignored. */
	readonly onDecision?: (decision: EgressDecision) => void
	/** Addresses of the host itself, refused like loopback (default: none beyond the ranges). */
	readonly hostAddresses?: readonly IpAddress[]
	/** Default `DEFAULT_HEAD_TIMEOUT_MS`. */
	readonly headTimeoutMs?: number
	/** Default `DEFAULT_IDLE_TIMEOUT_MS`. */
	readonly idleTimeoutMs?: number
	/** Default `DEFAULT_CONNECT_TIMEOUT_MS`. */
	readonly connectTimeoutMs?: number
	/** Connections open at once on this proxy (default `DEFAULT_MAX_TUNNELS`); more are refused. */
	readonly maxTunnels?: number
	/** The budget shared with other proxies (default `HOST_TUNNEL_BUDGET`, this process's). */
	readonly hostTunnels?: TunnelBudget
	/** Names the CA (informational). */
	readonly label?: string
	/** @internal Resolution seam for tests; default `dns.lookup` of the host. */
	readonly lookup?: EgressLookup
	/** @internal Extra CA certificates the upstream's certificate is verified against (tests). */
	readonly upstreamCa?: readonly string[]
}

export interface EgressProxy {
	readonly socketPath: string
	/** PEM of the CA the guest must trust; present when there are credentials. */
	readonly caCertificatePem?: string
	/** Sockets open now (the guests' and the upstreams'). */
	connectionCount(): number
	/** Stops listening, ends every connection, removes the socket. Idempotent. */
	close(): Promise<void>
}

/** What every connection of one proxy shares. */
interface ProxyState {
	readonly settings: TunnelSettings
	readonly headTimeoutMs: number
	readonly idleTimeoutMs: number
	readonly sandboxTunnels: TunnelBudget
	readonly hostTunnels: TunnelBudget
	readonly sockets: Set<Duplex>
	readonly closed: () => boolean
	report(decision: EgressDecision): void
}

async function defaultLookup(name: string): Promise<readonly string[]> {
	const entries = await dnsLookup(name, { all: true, verbatim: true })
	return entries.map((entry) => entry.address)
}

export async function startEgressProxy(options: EgressProxyOptions): Promise<EgressProxy> {
	const credentials = options.credentials ?? []
	const ca = credentials.length > 0 ? createEgressCa(options.label ?? 'sandbox') : undefined
	let closed = false
	const state: ProxyState = {
		settings: {
			rules: options.rules,
			credentials,
			hostAddresses: options.hostAddresses ?? [],
			lookup: options.lookup ?? defaultLookup,
			connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
			...(ca ? { ca } : {}),
			...(options.upstreamCa ? { upstreamCa: options.upstreamCa } : {}),
		},
		headTimeoutMs: options.headTimeoutMs ?? DEFAULT_HEAD_TIMEOUT_MS,
		idleTimeoutMs: options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
		sandboxTunnels: new TunnelBudget(options.maxTunnels ?? DEFAULT_MAX_TUNNELS, 'maxTunnels'),
		hostTunnels: options.hostTunnels ?? HOST_TUNNEL_BUDGET,
		sockets: new Set(),
		closed: () => closed,
		report: (decision) => {
			try {
				options.onDecision?.(decision)
			} catch {
				// The log is the caller's; it cannot change or break a verdict.
			}
		},
	}
	const server = await listen(options.socketPath, state)
	let closing: Promise<void> | undefined
	return {
		socketPath: options.socketPath,
		...(ca ? { caCertificatePem: ca.certificatePem } : {}),
		connectionCount: () => state.sockets.size,
		close: () => {
			closing ??= (async () => {
				closed = true
				const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()))
				const ended = [...state.sockets].map(
					(socket) => new Promise((resolve) => socket.once('close', resolve)),
				)
				for (const socket of state.sockets) socket.destroy()
				await Promise.all([serverClosed, ...ended])
				await unlink(options.socketPath).catch(() => undefined)
			})()
			return closing
		},
	}
}

async function listen(socketPath: string, state: ProxyState): Promise<Server> {
	await unlink(socketPath).catch(() => undefined)
	const server = createServer({ pauseOnConnect: true, allowHalfOpen: true }, (client) =>
		serveConnection(client, state),
	)
	// Past the caps a connection is refused by name (and closed at once); the kernel backlog
	// only meets a flood faster than that.
	server.maxConnections = state.sandboxTunnels.limit + 64
	await new Promise<void>((resolve, reject) => {
		server.once('error', reject)
		server.listen(socketPath, () => {
			server.off('error', reject)
			resolve()
		})
	})
	await chmod(socketPath, 0o666)
	return server
}

/** One connection: admitted, its setup under the head deadline, then open under the idle one. */
function serveConnection(client: Socket, state: ProxyState): void {
	client.on('error', () => undefined)
	// Every connection is the proxy's to end at close(), a refused one too.
	state.sockets.add(client)
	client.once('close', () => state.sockets.delete(client))
	if (!admit(client, state)) return
	const scope = connectionScope(client, state)
	let request: BridgeRequest | undefined
	const served = async (): Promise<OpenedTunnel | undefined> => {
		const bridge = await readBridgeRequest(scope)
		request = bridge.request
		if (request.kind === 'resolve') return answerResolve(client, state, request.name)
		return openTunnel(state.settings, scope, request, bridge.rest)
	}
	served().then(
		(opened) => {
			if (opened === undefined || request?.kind !== 'connect') return
			scope.opened()
			const { target, port } = request
			state.report({
				host: targetText(target),
				port,
				verdict: 'allow',
				reason: 'allowed',
				...opened,
			})
		},
		(error: unknown) => {
			const refused = asRefusal(error)
			const connect = request?.kind === 'connect' ? request : undefined
			state.report({
				host: connect ? targetText(connect.target) : '',
				port: connect?.port ?? 0,
				verdict: 'deny',
				layer: refused.layer,
				reason: refused.reason,
				...(refused.address ? { address: refused.address } : {}),
			})
			scope.refuse(refused.layer === 'connect' ? 'HTTP/1.1 403 Forbidden' : undefined)
		},
	)
}

/** Takes this connection from the sandbox's and the host's budgets; refuses it past either. */
function admit(client: Socket, state: ProxyState): boolean {
	const sandbox = state.sandboxTunnels.tryTake()
	const host = sandbox && state.hostTunnels.tryTake()
	if (sandbox && host) {
		client.once('close', () => {
			state.sandboxTunnels.release()
			state.hostTunnels.release()
		})
		return true
	}
	if (sandbox) state.sandboxTunnels.release()
	// Refused before its request is read: holding it to learn the host is what the cap prevents.
	state.report({
		host: '',
		port: 0,
		verdict: 'deny',
		layer: 'connect',
		reason: sandbox ? 'host-tunnel-limit' : 'tunnel-limit',
	})
	client.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\n')
	setTimeout(() => client.destroy(), REFUSAL_LINGER_MS).unref()
	return false
}

interface ConnectionScope extends TunnelScope {
	/** The tunnel is open: the head deadline gives way to the idle timeout. */
	opened(): void
	/** Ends the connection: every socket of it destroyed, `status` sent to the client first. */
	refuse(status?: string): void
}

function connectionScope(client: Socket, state: ProxyState): ConnectionScope {
	const owned = new Set<Duplex>()
	const deadline = new AbortController()
	let ended = false
	const end = () => {
		ended = true
		deadline.abort('closed-during-setup')
		for (const socket of owned) if (socket !== client) socket.destroy()
	}
	const own = <T extends Duplex>(socket: T): T => {
		// A socket that arrives after the connection (or the proxy) ended is ended at once.
		if (ended || state.closed()) socket.destroy()
		owned.add(socket)
		state.sockets.add(socket)
		socket.on('error', () => undefined)
		socket.once('close', () => {
			owned.delete(socket)
			state.sockets.delete(socket)
		})
		return socket
	}
	own(client)
	let open = false
	const timer = setTimeout(() => deadline.abort('head-timeout'), state.headTimeoutMs)
	client.once('close', () => {
		clearTimeout(timer)
		// An open tunnel's other end is ended by the splice (flushing what it holds) and destroyed
		// after the same linger; whatever of it has not closed by then goes here.
		if (open) setTimeout(end, TUNNEL_LINGER_MS).unref()
		else end()
	})
	return {
		client,
		signal: deadline.signal,
		own,
		opened: () => {
			open = true
			clearTimeout(timer)
			client.setTimeout(state.idleTimeoutMs, () => {
				client.destroy()
				end()
			})
		},
		refuse: (status) => {
			clearTimeout(timer)
			end()
			if (status === undefined || client.destroyed || !client.writable) {
				client.destroy()
				return
			}
			client.end(`${status}\r\nConnection: close\r\n\r\n`)
			setTimeout(() => client.destroy(), REFUSAL_LINGER_MS).unref()
		},
	}
}

async function readBridgeRequest(
	scope: TunnelScope,
): Promise<{ request: BridgeRequest; rest: Buffer }> {
	const read = await readUntil(scope.client, new RequestHeadReader(MAX_BRIDGE_HEAD_BYTES), {
		signal: scope.signal,
		layer: 'connect',
	})
	if (read.kind === 'invalid') throw new TunnelRefusal('connect', `bad-request:${read.reason}`)
	const bridge = bridgeRequestOf(read.head)
	if (bridge.kind === 'invalid') throw new TunnelRefusal('connect', `bad-request:${bridge.reason}`)
	return { request: bridge.request, rest: read.rest }
}

function answerResolve(client: Socket, state: ProxyState, name: string): undefined {
	const verdict = decideResolve(state.settings.rules, name)
	state.report({
		host: name,
		port: 0,
		layer: 'dns',
		verdict: verdict.allowed ? 'allow' : 'deny',
		reason: verdict.allowed ? 'allowed' : verdict.reason,
	})
	client.end(verdict.allowed ? 'HTTP/1.1 200 OK\r\n\r\n' : 'HTTP/1.1 403 Forbidden\r\n\r\n')
	// Answered: a client that keeps its side open holds nothing for long.
	setTimeout(() => client.destroy(), REFUSAL_LINGER_MS).unref()
	return undefined
}
