/**
 * The host's egress proxy for one sandbox: a server on a unix socket the guest's capture helper
 * (or the workload itself — it is all untrusted) sends `CONNECT host:port` and `RESOLVE name` to.
 * Every decision is made here, from the request alone: the name is matched against the rules, the
 * proxy resolves it itself and dials only an address outside the private-range deny set (unless a
 * CIDR rule names it), and the client's first bytes must carry the same name (TLS SNI, HTTP Host).
 * Hosts with credentials get them added here: plain HTTP rewritten, HTTPS terminated with the
 * sandbox's CA after the upstream certificate verified. Setup is bounded in time and bytes;
 * `close()` ends every connection and removes the socket.
 */
import { lookup as dnsLookup } from 'node:dns/promises'
import { chmod, unlink } from 'node:fs/promises'
import { createServer, connect as netConnect, type Server, type Socket } from 'node:net'
import { Duplex, PassThrough } from 'node:stream'
import { TLSSocket, connect as tlsConnect } from 'node:tls'
import { spliceTunnel } from '../../wire/tunnel-splice.js'
import type { EgressRule } from './allowed-hosts.js'
import { type BridgeRequest, readBridgeRequest } from './bridge-request.js'
import { createEgressCa, type EgressCa } from './egress-ca.js'
import { credentialHeadersFor, type EgressCredential } from './egress-credentials.js'
import {
	chooseAddress,
	decideClientName,
	decideConnect,
	decideResolve,
	type EgressDecision,
	type EgressLayer,
	targetText,
} from './egress-decision.js'
import { classifyFirstBytes, type FirstBytes, MAX_EARLY_BYTES } from './first-bytes.js'
import { firstRequestOf } from './first-request-only.js'
import { answerUpgradeOn, isUpgradeRequest } from './http-upgrade.js'
import { type IpAddress, ipAddressText, parseIpAddress } from './ip-address.js'
import { type RequestHead, readRequestHead, rewriteRequestHead } from './request-head.js'

/** Resolves a name to addresses (the proxy's own resolution; a test replaces it). */
export type EgressLookup = (name: string) => Promise<readonly string[]>

export interface EgressProxyOptions {
	/** Where the server listens (created here, mode 0666: the sandbox uid must reach it). */
	readonly socketPath: string
	readonly rules: readonly EgressRule[]
	readonly credentials?: readonly EgressCredential[]
	/** Called once per verdict; a throwing callback is ignored. */
	readonly onDecision?: (decision: EgressDecision) => void
	/** Addresses of the host itself, refused like loopback (default: none beyond the ranges). */
	readonly hostAddresses?: readonly IpAddress[]
	/** A connection must finish its request and first bytes within this (default 30 s). */
	readonly setupTimeoutMs?: number
	/** Resolving and dialing the upstream (default 10 s). */
	readonly connectTimeoutMs?: number
	/** Concurrent connections (default 256); more are refused by the kernel backlog. */
	readonly maxConnections?: number
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
	/** Connections open now. */
	connectionCount(): number
	/** Stops listening, ends every connection, removes the socket. Idempotent. */
	close(): Promise<void>
}

const DEFAULT_SETUP_TIMEOUT_MS = 30_000
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000
const MAX_CREDENTIAL_HEAD_BYTES = 64 * 1024

class TunnelRefusal extends Error {
	constructor(
		readonly layer: EgressLayer,
		readonly reason: string,
		readonly address?: string,
	) {
		super(reason)
	}
}

async function defaultLookup(name: string): Promise<readonly string[]> {
	const entries = await dnsLookup(name, { all: true, verbatim: true })
	return entries.map((entry) => entry.address)
}

function withTimeout<T>(work: Promise<T>, ms: number, reason: string): Promise<T> {
	let timer: NodeJS.Timeout | undefined
	return Promise.race([
		work,
		new Promise<never>((_, reject) => {
			timer = setTimeout(() => reject(new TunnelRefusal('ip', reason)), ms)
		}),
	]).finally(() => clearTimeout(timer))
}

/** Bytes from `stream` (after `initial`) until `done` says enough; bounded by `maxBytes`. */
function gather<T>(
	stream: NodeJS.ReadableStream & { on: Socket['on']; off: Socket['off'] },
	initial: Buffer,
	done: (bytes: Buffer) => T | undefined,
	maxBytes: number,
): Promise<{ value: T; bytes: Buffer }> {
	return new Promise((resolve, reject) => {
		let bytes = initial
		const finish = (error?: Error) => {
			stream.off('data', onData)
			stream.off('end', onEnd)
			stream.off('error', onEnd)
			stream.off('close', onEnd)
			stream.pause()
			if (error) reject(error)
		}
		const check = () => {
			const value = done(bytes)
			if (value !== undefined) {
				finish()
				resolve({ value, bytes })
			} else if (bytes.length > maxBytes)
				finish(new TunnelRefusal('connect', 'early-data-too-large'))
		}
		const onData = (chunk: Buffer) => {
			bytes = bytes.length === 0 ? chunk : Buffer.concat([bytes, chunk])
			check()
		}
		const onEnd = () => finish(new TunnelRefusal('connect', 'closed-during-setup'))
		stream.on('data', onData)
		stream.once('end', onEnd)
		stream.once('error', onEnd)
		stream.once('close', onEnd)
		check()
		if (bytes === initial) stream.resume()
	})
}

function dial(address: IpAddress, port: number, timeoutMs: number): Promise<Socket> {
	return withTimeout(
		new Promise<Socket>((resolve, reject) => {
			const socket = netConnect({ host: ipAddressText(address), port })
			socket.once('connect', () => {
				socket.off('error', reject)
				resolve(socket)
			})
			socket.once('error', () => reject(new TunnelRefusal('ip', 'upstream-unreachable')))
		}),
		timeoutMs,
		'upstream-timeout',
	)
}

/** The head of a request to a name target, re-serialized: one request per connection, so a later
 * request on it cannot name another Host unchecked; credentials set when there are any. An
 * upgrade keeps its `upgrade` token: after a `101` the connection carries no more requests. */
function rewrittenHead(
	head: RequestHead,
	headers: Readonly<Record<string, string>> = {},
	upgrade = false,
): Buffer {
	return rewriteRequestHead(head, { ...headers, Connection: upgrade ? 'Upgrade, close' : 'close' })
}

export async function startEgressProxy(options: EgressProxyOptions): Promise<EgressProxy> {
	const rules = options.rules
	const credentials = options.credentials ?? []
	const hostAddresses = options.hostAddresses ?? []
	const lookup = options.lookup ?? defaultLookup
	const setupTimeoutMs = options.setupTimeoutMs ?? DEFAULT_SETUP_TIMEOUT_MS
	const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS
	const ca: EgressCa | undefined =
		credentials.length > 0 ? createEgressCa(options.label ?? 'sandbox') : undefined
	const sockets = new Set<Duplex>()
	let closed = false
	const track = <T extends Duplex>(socket: T): T => {
		// A dial that completes after close() is ended at once.
		if (closed) socket.destroy()
		sockets.add(socket)
		socket.once('close', () => sockets.delete(socket))
		socket.on('error', () => undefined)
		return socket
	}
	const report = (decision: EgressDecision) => {
		try {
			options.onDecision?.(decision)
		} catch {
			// The log is the caller's; it cannot change or break a verdict.
		}
	}

	const resolveName = (client: Socket, name: string) => {
		const verdict = decideResolve(rules, name)
		report({
			host: name,
			port: 0,
			layer: 'dns',
			verdict: verdict.allowed ? 'allow' : 'deny',
			reason: verdict.allowed ? 'allowed' : verdict.reason,
		})
		client.end(verdict.allowed ? 'HTTP/1.1 200 OK\r\n\r\n' : 'HTTP/1.1 403 Forbidden\r\n\r\n')
	}

	const tunnel = async (
		client: Socket,
		request: Extract<BridgeRequest, { kind: 'connect' }>,
		rest: Buffer,
	) => {
		const { target, port } = request
		const host = targetText(target)
		const connectVerdict = decideConnect(rules, target, port)
		if (!connectVerdict.allowed) throw new TunnelRefusal('connect', connectVerdict.reason)
		const texts =
			target.kind === 'address'
				? [target.text]
				: await withTimeout(lookup(target.name), connectTimeoutMs, 'resolve-timeout').catch(() => {
						throw new TunnelRefusal('ip', 'unresolved')
					})
		const addresses = texts.flatMap((text) => {
			const parsed = parseIpAddress(text)
			return parsed ? [parsed] : []
		})
		const choice = chooseAddress(rules, hostAddresses, addresses, port)
		if (!choice.allowed) {
			throw new TunnelRefusal('ip', choice.reason, choice.address && ipAddressText(choice.address))
		}
		const address = ipAddressText(choice.address)
		const rule = connectVerdict.rule?.entry ?? choice.rule?.entry
		client.write('HTTP/1.1 200 Connection Established\r\n\r\n')
		const headers =
			target.kind === 'name' ? credentialHeadersFor(credentials, target.name) : undefined
		// Dialed at once, so a protocol whose server speaks first works; nothing the client sends
		// reaches it before the first bytes passed their check. Never settles unobserved.
		const dialing = dial(choice.address, port, connectTimeoutMs).then(track)
		dialing.catch(() => undefined)
		const failedDial = dialing.then(
			() => new Promise<never>(() => undefined),
			(error: unknown) => {
				throw error instanceof TunnelRefusal
					? new TunnelRefusal(error.layer, error.reason, address)
					: error
			},
		)
		if (headers === undefined) {
			// The server's bytes flow at once; a client refused below never gets further than this.
			void dialing.then(
				(upstream) => upstream.pipe(client),
				() => undefined,
			)
		}
		const first = await Promise.race([
			gather<FirstBytes>(
				client,
				rest,
				(bytes) => {
					const read = classifyFirstBytes(bytes)
					return read.kind === 'incomplete' ? undefined : read
				},
				MAX_EARLY_BYTES,
			),
			failedDial,
		]).catch((error: unknown) => {
			void dialing.then(
				(upstream) => upstream.destroy(),
				() => undefined,
			)
			throw error instanceof TunnelRefusal
				? new TunnelRefusal(error.layer, error.reason, address)
				: error
		})
		const { value: kind, bytes } = first
		const refuse = async (layer: EgressLayer, reason: string): Promise<never> => {
			void dialing.then(
				(upstream) => upstream.destroy(),
				() => undefined,
			)
			throw new TunnelRefusal(layer, reason, address)
		}
		if (kind.kind === 'invalid') return refuse(kind.layer, kind.reason)
		let layer: EgressLayer = 'ip'
		if (kind.kind === 'tls' || kind.kind === 'http') {
			layer = kind.kind === 'tls' ? 'sni' : 'host'
			const sent =
				kind.kind === 'tls'
					? kind.serverName
					: kind.head.headers.find(([name]) => name.toLowerCase() === 'host')?.[1]
			const verdict = decideClientName(target, layer, sent)
			if (!verdict.allowed) return refuse(layer, verdict.reason)
		}
		if (kind.kind === 'http' && headers !== undefined) {
			if (kind.head.headers.some(([name]) => name.toLowerCase() === 'upgrade')) {
				return refuse('host', 'upgrade-refused')
			}
		}
		const upgrade = kind.kind === 'http' && headers === undefined && isUpgradeRequest(kind.head)
		const firstRequest =
			kind.kind === 'http' ? firstRequestOf(kind.head, bytes, upgrade) : undefined
		if (firstRequest instanceof Error) return refuse('host', 'http-body-framing-invalid')
		const upstream = await dialing.catch((error: unknown) => {
			throw error instanceof TunnelRefusal
				? new TunnelRefusal(error.layer, error.reason, address)
				: error
		})
		const allow = () =>
			report({
				host,
				port,
				verdict: 'allow',
				layer,
				reason: 'allowed',
				address,
				...(rule ? { rule } : {}),
			})
		if (
			kind.kind === 'tls' &&
			headers !== undefined &&
			ca !== undefined &&
			target.kind === 'name'
		) {
			await terminate(client, bytes, upstream, { name: target.name, headers, ca, allow })
			return
		}
		client.setTimeout(0)
		if (kind.kind === 'http' && target.kind === 'name' && firstRequest !== undefined) {
			if (upgrade) answerUpgradeOn(upstream, firstRequest.rest)
			upstream.write(rewrittenHead(kind.head, headers, upgrade))
			upstream.write(firstRequest.early)
			allow()
			spliceTunnel(client, upstream, {
				upstreamPiped: headers === undefined,
				through: firstRequest.rest,
			})
			return
		}
		// TLS, other protocols, and HTTP to an address target: the address alone decides where the
		// bytes go (no Host can route them elsewhere), so they pass as sent.
		upstream.write(bytes)
		allow()
		spliceTunnel(client, upstream, { upstreamPiped: headers === undefined })
	}

	/** TLS terminated for a host with credentials: verify the upstream, then rewrite each head. */
	const terminate = async (
		client: Socket,
		early: Buffer,
		upstreamTcp: Socket,
		grant: {
			readonly name: string
			readonly headers: Readonly<Record<string, string>>
			readonly ca: EgressCa
			readonly allow: () => void
		},
	) => {
		const { name, headers, ca: authority } = grant
		const inbound = new PassThrough()
		inbound.write(early)
		client.pipe(inbound)
		const plain = Duplex.from({ readable: inbound, writable: client })
		const leaf = authority.leafFor(name)
		const guestSide = track(
			new TLSSocket(plain, {
				isServer: true,
				key: leaf.key,
				cert: leaf.cert,
				ALPNProtocols: ['http/1.1'],
			}),
		)
		const upstream = track(
			tlsConnect({
				socket: upstreamTcp,
				servername: name,
				ALPNProtocols: ['http/1.1'],
				...(options.upstreamCa ? { ca: [...options.upstreamCa] } : {}),
			}),
		)
		const verified = withTimeout(
			new Promise<void>((resolve, reject) => {
				upstream.once('secureConnect', () => resolve())
				upstream.once('error', () =>
					reject(new TunnelRefusal('sni', 'upstream-certificate-refused')),
				)
			}),
			connectTimeoutMs,
			'upstream-timeout',
		)
		verified.catch(() => undefined)
		const { value: head, bytes } = await gather<RequestHead | TunnelRefusal>(
			guestSide,
			Buffer.alloc(0),
			(data) => {
				const read = readRequestHead(data, MAX_CREDENTIAL_HEAD_BYTES)
				if (read.kind === 'incomplete') return undefined
				return read.kind === 'invalid' ? new TunnelRefusal('host', 'http-head-invalid') : read.head
			},
			MAX_CREDENTIAL_HEAD_BYTES,
		)
		if (head instanceof TunnelRefusal) throw head
		const hostField = head.headers.find(([field]) => field.toLowerCase() === 'host')?.[1]
		const verdict = decideClientName({ kind: 'name', name }, 'host', hostField)
		if (!verdict.allowed) throw new TunnelRefusal('host', verdict.reason)
		if (head.headers.some(([field]) => field.toLowerCase() === 'upgrade')) {
			throw new TunnelRefusal('host', 'upgrade-refused')
		}
		const firstRequest = firstRequestOf(head, bytes)
		if (firstRequest instanceof Error) throw new TunnelRefusal('host', 'http-body-framing-invalid')
		// Credentials go out only over a connection whose certificate verified for this name.
		await verified
		grant.allow()
		client.setTimeout(0)
		upstream.write(rewrittenHead(head, headers))
		upstream.write(firstRequest.early)
		spliceTunnel(guestSide, upstream, { through: firstRequest.rest })
	}

	const handle = (client: Socket) => {
		track(client)
		client.setTimeout(setupTimeoutMs, () => client.destroy())
		let request: BridgeRequest | undefined
		gather(
			client,
			Buffer.alloc(0),
			(bytes) => {
				const read = readBridgeRequest(bytes)
				if (read.kind === 'incomplete') return undefined
				return read
			},
			MAX_EARLY_BYTES,
		)
			.then(async ({ value: read, bytes }) => {
				if (read.kind === 'invalid')
					throw new TunnelRefusal('connect', `bad-request:${read.reason}`)
				if (read.kind !== 'request') return
				request = read.request
				if (request.kind === 'resolve') return resolveName(client, request.name)
				await tunnel(client, request, bytes.subarray(request.length))
			})
			.catch((error: unknown) => {
				const refused =
					error instanceof TunnelRefusal ? error : new TunnelRefusal('connect', 'proxy-error')
				if (request?.kind === 'connect' || request === undefined) {
					report({
						host: request?.kind === 'connect' ? targetText(request.target) : '',
						port: request?.kind === 'connect' ? request.port : 0,
						verdict: 'deny',
						layer: refused.layer,
						reason: refused.reason,
						...(refused.address ? { address: refused.address } : {}),
					})
				}
				if (!client.destroyed && client.writable && refused.layer === 'connect') {
					client.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n')
					setTimeout(() => client.destroy(), 1000).unref()
				} else client.destroy()
			})
	}

	await unlink(options.socketPath).catch(() => undefined)
	const server: Server = createServer({ pauseOnConnect: true, allowHalfOpen: true }, handle)
	server.maxConnections = options.maxConnections ?? 256
	await new Promise<void>((resolve, reject) => {
		server.once('error', reject)
		server.listen(options.socketPath, () => {
			server.off('error', reject)
			resolve()
		})
	})
	await chmod(options.socketPath, 0o666)
	let closing: Promise<void> | undefined
	return {
		socketPath: options.socketPath,
		...(ca ? { caCertificatePem: ca.certificatePem } : {}),
		connectionCount: () => sockets.size,
		close: () => {
			closing ??= (async () => {
				closed = true
				const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()))
				const ended = [...sockets].map(
					(socket) => new Promise((resolve) => socket.once('close', resolve)),
				)
				for (const socket of sockets) socket.destroy()
				await Promise.all([serverClosed, ...ended])
				await unlink(options.socketPath).catch(() => undefined)
			})()
			return closing
		},
	}
}
