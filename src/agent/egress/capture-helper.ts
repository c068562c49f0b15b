/**
 * The egress capture helper inside the guest. The host gave the guest's network namespace a
 * `local default` route on loopback, so every TCP connect to any address lands on a listener here
 * whose local address is the original destination; each is forwarded as `CONNECT` over the
 * bind-mounted socket (a microVM: the host's forward on the guest's network) to the host's proxy, which decides everything. The DNS stub answers allowed
 * names (the proxy is asked with `RESOLVE`) with fake addresses from 198.18.0.0/15 and maps them
 * back to names here. This process is as untrusted as the workload: it only makes ordinary
 * programs work, and with it dead nothing reaches anywhere.
 */
import { createSocket, type Socket as Socket4 } from 'node:dgram'
import { connect, createServer, type Server, type Socket } from 'node:net'
import { CONNECT_METHOD, isFakeIp, RESOLVE_METHOD } from '../../wire/egress-bridge.js'
import { spliceTunnel } from '../../wire/tunnel-splice.js'
import { dnsAnswer, dnsFormatError, readDnsQuestion } from './dns-message.js'
import type { EgressCaptureConfig } from './egress-capture-config.js'
import { FakeIpAllocator } from './fake-ip-allocator.js'

const DNS_PORT = 53
/** The namespace's port sysctl is set by the host just after start: bind until it took effect. */
const BIND_RETRY_MS = 20
const BIND_DEADLINE_MS = 60_000
const REPLY_MAX_BYTES = 1024
const RESOLVE_TIMEOUT_MS = 5_000

interface Bridge {
	/** A socket already past the proxy's `200` reply, or undefined when the proxy refused. */
	open(head: string): Promise<{ socket: Socket; rest: Buffer } | undefined>
}

function bridgeTo(config: EgressCaptureConfig): Bridge {
	const { proxyAddress, socketPath = '' } = config
	return {
		open: (head) =>
			new Promise((resolve) => {
				const socket = proxyAddress
					? connect(proxyAddress.port, proxyAddress.host)
					: connect(socketPath)
				let reply = Buffer.alloc(0)
				const fail = () => {
					socket.destroy()
					resolve(undefined)
				}
				socket.setTimeout(RESOLVE_TIMEOUT_MS * 12, fail)
				socket.once('connect', () => socket.write(head))
				socket.once('error', fail)
				socket.once('end', fail)
				const onData = (chunk: Buffer) => {
					reply = Buffer.concat([reply, chunk])
					const end = reply.indexOf('\r\n\r\n')
					if (end < 0) {
						if (reply.length > REPLY_MAX_BYTES) fail()
						return
					}
					socket.off('data', onData)
					socket.off('end', fail)
					socket.pause()
					socket.setTimeout(0)
					if (!reply.subarray(0, end).toString('latin1').startsWith('HTTP/1.1 200')) return fail()
					resolve({ socket, rest: reply.subarray(end + 4) })
				}
				socket.on('data', onData)
			}),
	}
}

function listenWithRetry(server: Server, port: number, host: string): Promise<void> {
	const deadline = Date.now() + BIND_DEADLINE_MS
	return new Promise((resolve, reject) => {
		const attempt = () => {
			const onError = (error: NodeJS.ErrnoException) => {
				if (error.code === 'EACCES' && Date.now() < deadline) setTimeout(attempt, BIND_RETRY_MS)
				else reject(error)
			}
			server.once('error', onError)
			server.listen({ port, host, ipv6Only: false }, () => {
				server.off('error', onError)
				resolve()
			})
		}
		attempt()
	})
}

/** The original destination of a captured connection, plain (no `::ffff:`). */
function destinationOf(socket: Socket): string | undefined {
	const address = socket.localAddress
	if (address === undefined) return undefined
	return address.startsWith('::ffff:') ? address.slice(7) : address
}

function isLoopback(address: string): boolean {
	return address.startsWith('127.') || address === '::1'
}

/** The stub's socket on 127.0.0.1:53, a fresh one per attempt while the port is still privileged. */
async function bindDns(log: (line: string) => void): Promise<Socket4> {
	const deadline = Date.now() + BIND_DEADLINE_MS
	for (;;) {
		const dns = createSocket('udp4')
		const bound = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
			dns.once('error', resolve)
			dns.bind(DNS_PORT, '127.0.0.1', () => resolve(undefined))
		})
		if (bound === undefined) {
			dns.removeAllListeners('error')
			dns.on('error', (error) => log(`egress dns: ${error.message}`))
			return dns
		}
		try {
			dns.close()
		} catch {
			// Never bound: nothing to close.
		}
		if (bound.code !== 'EACCES' || Date.now() >= deadline) throw bound
		await new Promise((resolve) => setTimeout(resolve, BIND_RETRY_MS))
	}
}

export interface CaptureHelper {
	close(): void
}

export async function startCaptureHelper(
	config: EgressCaptureConfig,
	log: (line: string) => void,
): Promise<CaptureHelper> {
	const bridge = bridgeTo(config)
	const fakeIps = new FakeIpAllocator()
	const servers: Server[] = []

	const forward = async (client: Socket) => {
		client.on('error', () => undefined)
		client.pause()
		const destination = destinationOf(client)
		const port = client.localPort
		// Loopback is the guest's own; an unknown fake address was never handed out here.
		if (destination === undefined || port === undefined || isLoopback(destination)) {
			client.destroy()
			return
		}
		const name = isFakeIp(destination) ? fakeIps.nameFor(destination) : undefined
		if (isFakeIp(destination) && name === undefined) {
			client.destroy()
			return
		}
		const host = name ?? (destination.includes(':') ? `[${destination}]` : destination)
		const opened = await bridge.open(`${CONNECT_METHOD} ${host}:${port} HTTP/1.1\r\n\r\n`)
		if (opened === undefined || client.destroyed) {
			opened?.socket.destroy()
			client.destroy()
			return
		}
		const { socket, rest } = opened
		if (rest.length > 0) client.write(rest)
		spliceTunnel(client, socket)
		client.resume()
		socket.resume()
	}

	for (const port of config.ports) {
		// Half-open: a workload that shuts down its sending side still gets the answer to what it sent.
		const server = createServer({ pauseOnConnect: true, allowHalfOpen: true }, (client) => {
			forward(client).catch(() => client.destroy())
		})
		await listenWithRetry(server, port, '::')
		servers.push(server)
	}

	const verdicts = new Map<string, Promise<boolean>>()
	const allowed = (name: string) => {
		let verdict = verdicts.get(name)
		if (verdict === undefined) {
			verdict = bridge.open(`${RESOLVE_METHOD} ${name} HTTP/1.1\r\n\r\n`).then((opened) => {
				opened?.socket.destroy()
				return opened !== undefined
			})
			// A bounded cache: the proxy is asked again once it is full.
			if (verdicts.size >= 4096) verdicts.clear()
			verdicts.set(name, verdict)
			void verdict.then((ok) => {
				if (!ok) verdicts.delete(name)
			})
		}
		return verdict
	}
	const dns = await bindDns(log)
	dns.on('message', (packet, peer) => {
		const question = readDnsQuestion(packet)
		if (question.kind === 'unreadable') return
		const reply = (bytes: Buffer) => dns.send(bytes, peer.port, peer.address)
		if (question.kind === 'malformed') return reply(dnsFormatError(question))
		void allowed(question.name).then((ok) => {
			reply(dnsAnswer(question, ok ? fakeIps.addressFor(question.name) : undefined))
		})
	})
	return {
		close: () => {
			for (const server of servers) server.close()
			dns.close()
		},
	}
}
