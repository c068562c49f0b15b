/**
 * A guest port as an HTTP (and WebSocket) endpoint on the host's loopback: a TCP server on
 * `127.0.0.1:0` that joins each accepted connection to a fresh `openTcpConnection` into the
 * guest — the one TCP channel, no second path — so it is the same on every tier (on Kubernetes
 * the host running the library serves it). With auth, a connection's first request head is read
 * (`request-head.ts`, the one HTTP reader) and must carry the token; the token is taken out
 * before the head is forwarded, and later requests on that connection go as sent (the
 * connection proved it). Bounded: at most `maxConnections` at once (one more is answered `503`),
 * a head within `EXPOSURE_HEAD_TIMEOUT_MS`.
 */
import { randomBytes } from 'node:crypto'
import { createServer, type Server, type Socket } from 'node:net'
import type {
	SandboxExposedPort,
	SandboxExposePortOptions,
	SandboxTcpConnection,
} from '../../contract/sandbox.js'
import { RequestHeadReader, rewriteRequestHead } from '../egress/request-head.js'
import { readUntil } from '../egress/setup-read.js'
import { type HttpAnswer, httpAnswer, tokenOfRequest } from './exposure-http.js'
import { PortExposureListenError } from './port-errors.js'

export const DEFAULT_EXPOSURE_MAX_CONNECTIONS = 64
/** A client that sends no complete head within this long is answered `408`. */
export const EXPOSURE_HEAD_TIMEOUT_MS = 30_000
const MAX_HEAD_BYTES = 64 * 1024
/** How long an answered refusal waits for its client to go before it is cut. */
const REFUSAL_LINGER_MS = 5_000
/** How long one side of a joined connection waits for its peer once the other side ended. */
const JOIN_LINGER_MS = 10_000

/** Opens one connection to the guest port (the sandbox's `openTcpConnection`). */
export type GuestConnector = (port: number, signal: AbortSignal) => Promise<SandboxTcpConnection>

export interface PortExposureSettings {
	readonly port: number
	readonly auth: boolean
	readonly maxConnections: number
	readonly connect: GuestConnector
	readonly signal?: AbortSignal
}

/** The settings of an `exposePort` call, its defaults applied (the arguments are checked). */
export function exposureSettings(
	port: number,
	options: SandboxExposePortOptions,
	signal: AbortSignal | undefined,
): Omit<PortExposureSettings, 'connect'> {
	return {
		port,
		auth: options.auth ?? true,
		maxConnections: options.maxConnections ?? DEFAULT_EXPOSURE_MAX_CONNECTIONS,
		...(signal === undefined ? {} : { signal }),
	}
}

/** One exposure: the listening server and every connection it joined. */
export class PortExposure implements SandboxExposedPort {
	readonly url: string
	readonly port: number
	readonly hostPort: number
	readonly token: string | undefined
	readonly closed: Promise<void>
	readonly #server: Server
	readonly #settings: PortExposureSettings
	readonly #sockets = new Set<Socket>()
	readonly #lifetime = new AbortController()
	#ended: (() => void) | undefined

	private constructor(server: Server, settings: PortExposureSettings, hostPort: number) {
		this.#server = server
		this.#settings = settings
		this.port = settings.port
		this.hostPort = hostPort
		this.url = `http://127.0.0.1:${hostPort}`
		this.token = settings.auth ? randomBytes(32).toString('base64url') : undefined
		this.closed = new Promise((resolve) => {
			this.#ended = resolve
		})
		server.on('connection', (socket) => this.#accept(socket))
	}

	/** Listens on an ephemeral loopback port; `PortExposureListenError` when the host refuses. */
	static async open(settings: PortExposureSettings): Promise<PortExposure> {
		settings.signal?.throwIfAborted()
		const server = createServer({ pauseOnConnect: true, noDelay: true })
		const hostPort = await new Promise<number>((resolve, reject) => {
			server.once('error', (error) => reject(new PortExposureListenError(settings.port, error)))
			server.listen({ host: '127.0.0.1', port: 0, signal: settings.signal }, () => {
				const address = server.address()
				resolve(typeof address === 'object' && address ? address.port : 0)
			})
		})
		// A listen aborted by the signal calls neither callback: the abort is the answer.
		settings.signal?.throwIfAborted()
		return new PortExposure(server, settings, hostPort)
	}

	/** Idempotent: stops accepting, cuts every joined connection, resolves once the server closed. */
	async close(): Promise<void> {
		if (!this.#lifetime.signal.aborted) {
			this.#lifetime.abort('exposure-closed')
			for (const socket of this.#sockets) socket.destroy()
			this.#server.close(() => this.#ended?.())
		}
		await this.closed
	}

	#accept(socket: Socket): void {
		if (this.#lifetime.signal.aborted) {
			socket.destroy()
			return
		}
		socket.on('error', () => socket.destroy())
		if (this.#sockets.size >= this.#settings.maxConnections) {
			const limit = this.#settings.maxConnections
			answer(socket, {
				status: 503,
				text: `namzu-sandbox exposure of guest port ${this.port}: connection-limit (${limit} open); close idle connections or expose with a higher maxConnections`,
			})
			return
		}
		this.#sockets.add(socket)
		socket.once('close', () => this.#sockets.delete(socket))
		void this.#serve(socket).catch(() => socket.destroy())
	}

	async #serve(socket: Socket): Promise<void> {
		const token = this.token
		if (token === undefined) return this.#join(socket, [])
		const signal = AbortSignal.any([
			this.#lifetime.signal,
			AbortSignal.timeout(EXPOSURE_HEAD_TIMEOUT_MS),
		])
		const read = await readUntil(socket, new RequestHeadReader(MAX_HEAD_BYTES), {
			signal,
			layer: 'http',
		}).catch(() => undefined)
		if (read === undefined) {
			if (this.#lifetime.signal.aborted || socket.readableEnded) return void socket.destroy()
			return answer(socket, { status: 408, text: 'namzu-sandbox: no request head in time' })
		}
		if (read.kind === 'invalid') {
			return answer(socket, { status: 400, text: `namzu-sandbox: bad request (${read.reason})` })
		}
		const proof = tokenOfRequest(read.head, token, this.hostPort)
		if (proof === undefined) {
			return answer(socket, {
				status: 401,
				text: 'namzu-sandbox: this exposed port needs its token: send header x-namzu-token or Authorization: Bearer <token>, or open the URL once with ?token=<token>',
			})
		}
		const head = rewriteRequestHead(proof.head, {})
		const setCookie = proof.fromQuery ? proof.cookie : undefined
		return this.#join(socket, [head, read.rest], setCookie)
	}

	/** Connects the guest port and joins it to `socket`, `first` sent ahead of the socket's bytes. */
	async #join(socket: Socket, first: readonly Buffer[], setCookie?: string): Promise<void> {
		let connection: SandboxTcpConnection
		try {
			connection = await this.#settings.connect(this.port, this.#lifetime.signal)
		} catch (error) {
			if (this.#lifetime.signal.aborted) return void socket.destroy()
			const why = error instanceof Error ? error.message : String(error)
			return answer(socket, {
				status: 502,
				text: `namzu-sandbox: guest port ${this.port} could not be reached (is a server listening there?): ${why}`,
			})
		}
		if (this.#lifetime.signal.aborted || socket.destroyed) {
			connection.destroy()
			return void socket.destroy()
		}
		for (const bytes of first) if (bytes.length > 0) connection.write(bytes)
		joinToGuest(socket, connection, setCookie)
	}
}

/** Answers `socket` and lets it go: its remaining bytes are read and dropped (closing on unread
 * bytes would reset the connection and could lose the answer), then it is cut after a linger. */
function answer(socket: Socket, reply: HttpAnswer): void {
	socket.end(httpAnswer(reply))
	socket.resume()
	const timer = setTimeout(() => socket.destroy(), REFUSAL_LINGER_MS)
	timer.unref()
	socket.once('close', () => clearTimeout(timer))
}

/**
 * Both directions with backpressure: a full socket pauses the guest connection, a full guest
 * connection pauses the socket. An end on one side ends the other (so a slow reader still gets
 * the tail); an error or a cut destroys both; an ended side whose peer never goes is cut after
 * `JOIN_LINGER_MS`. `setCookie` is put after the status line of the guest's first answer.
 */
function joinToGuest(socket: Socket, connection: SandboxTcpConnection, setCookie?: string): void {
	let cookie = setCookie === undefined ? undefined : new CookieInsertion(setCookie)
	const toClient = (chunk: Uint8Array) => {
		let bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
		if (cookie) {
			const out = cookie.push(bytes)
			if (out === undefined) return
			bytes = out
			cookie = undefined
		}
		if (!socket.write(bytes)) connection.pause()
	}
	const unsubscribe = connection.onData(toClient)
	const undrain = connection.onDrain(() => socket.resume())
	socket.on('drain', () => connection.resume())
	socket.on('data', (chunk: Buffer) => {
		if (!connection.write(chunk)) socket.pause()
	})
	socket.once('end', () => connection.end())
	socket.once('close', () => {
		unsubscribe()
		undrain()
		connection.destroy()
	})
	void connection.closed
		.catch(() => undefined)
		.then(() => {
			const held = cookie?.flush()
			if (held) socket.write(held)
			socket.end()
			const timer = setTimeout(() => socket.destroy(), JOIN_LINGER_MS)
			timer.unref()
			socket.once('close', () => clearTimeout(timer))
		})
	socket.resume()
}

/** Holds the guest's first bytes until its status line is complete, then adds `Set-Cookie`. */
class CookieInsertion {
	readonly #line: string
	#held: Buffer = Buffer.alloc(0)

	constructor(cookie: string) {
		this.#line = `Set-Cookie: ${cookie}\r\n`
	}

	/** The bytes to send once decided; undefined while still held. */
	push(chunk: Buffer): Buffer | undefined {
		this.#held = Buffer.concat([this.#held, chunk])
		const end = this.#held.indexOf('\r\n')
		// Not HTTP after all (no status line in the first 8 KiB): pass it through untouched.
		if (end < 0 && this.#held.length < 8192) return undefined
		if (end < 0 || !this.#held.subarray(0, 5).equals(Buffer.from('HTTP/'))) return this.#held
		const head = this.#held.subarray(0, end + 2)
		return Buffer.concat([head, Buffer.from(this.#line, 'latin1'), this.#held.subarray(end + 2)])
	}

	flush(): Buffer | undefined {
		return this.#held.length > 0 ? this.#held : undefined
	}
}
