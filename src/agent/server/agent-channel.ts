/**
 * The agent's listener as something it can let go of and take back. gVisor cannot save a sandbox
 * while a socket bound through `--host-uds` is open (its checkpoint fails and the sandbox dies), so
 * before a memory checkpoint the host asks `release-listener`: the agent answers, closes its
 * listener and every connection, and binds its path again on SIGUSR2 — sent by the host once the
 * image is written (the parent) or restored (a fork) — or on its own after the bound the request
 * named, so a host that died in between does not leave it unreachable.
 */
import type { Server, Socket } from 'node:net'
import type { ListenMode } from '../handler/config.js'
import { type Listener, startListening } from './listen.js'

export const RELISTEN_SIGNAL = 'SIGUSR2'

/**
 * A failed bind is tried again this often, this many times. Through gVisor's `--host-uds` a bind
 * has failed once (EACCES) and not again, right after a restore and on a cold start alike; one
 * failure must not leave the agent unreachable (or end it) before the host gives up on it.
 */
const RELISTEN_RETRY_MS = 200
const RELISTEN_RETRIES = 25

export class AgentChannel {
	readonly #mode: ListenMode
	readonly #onConnection: (socket: Socket) => void
	readonly #log: (line: string) => void
	readonly #open = new Set<Socket>()
	#server: Server | undefined
	#relistenTimer: NodeJS.Timeout | undefined
	#relistening: Promise<void> | undefined

	constructor(
		mode: ListenMode,
		onConnection: (socket: Socket) => void,
		log: (line: string) => void,
	) {
		this.#mode = mode
		this.#onConnection = onConnection
		this.#log = log
		// Installed for good: SIGUSR2's default would end the agent, and while bound it is a no-op.
		if (mode.kind === 'unix') process.on(RELISTEN_SIGNAL, () => void this.relisten())
	}

	get server(): Server | undefined {
		return this.#server
	}

	/** Only a unix listener is let go of (the transport gVisor's `--host-uds` binds on the host). */
	get releasable(): boolean {
		return this.#mode.kind === 'unix'
	}

	async listen(): Promise<Listener> {
		const listener = await startListening(this.#mode, (socket) => {
			this.#open.add(socket)
			socket.once('close', () => this.#open.delete(socket))
			this.#onConnection(socket)
		})
		this.#server = listener.server
		listener.server.on('error', (error) => this.#log(`listener: ${error.message}`))
		return listener
	}

	/**
	 * Binds; on a unix path a failed bind is tried again every `RELISTEN_RETRY_MS`, at most
	 * `RELISTEN_RETRIES` times (the first bind and a relisten alike).
	 */
	async #bindRetrying(what: 'listen' | 'relisten'): Promise<Listener> {
		for (let failures = 1; ; failures++) {
			try {
				return await this.listen()
			} catch (error) {
				const again = this.#mode.kind === 'unix' && failures <= RELISTEN_RETRIES
				const message = error instanceof Error ? error.message : String(error)
				this.#log(`${what} failed (${failures}): ${message}${again ? '; trying again' : ''}`)
				if (!again) throw error
				await new Promise((resolve) => setTimeout(resolve, RELISTEN_RETRY_MS))
			}
		}
	}

	/** The first bind. */
	listenFirst(): Promise<Listener> {
		return this.#bindRetrying('listen')
	}

	/**
	 * Closes the listener and every open connection (`keep`'s last, once its answer is out), then
	 * waits for SIGUSR2 or `relistenAfterMs` to bind again.
	 */
	release(keep: Socket, relistenAfterMs: number): void {
		const server = this.#server
		this.#server = undefined
		server?.close()
		for (const socket of this.#open) if (socket !== keep) socket.destroy()
		keep.once('close', () => {
			clearTimeout(this.#relistenTimer)
			this.#relistenTimer = setTimeout(() => void this.relisten(), relistenAfterMs)
		})
	}

	/** Binds the path again (a no-op while bound, or while a bind is being tried). */
	relisten(): Promise<void> {
		clearTimeout(this.#relistenTimer)
		if (this.#server !== undefined) return Promise.resolve()
		this.#relistening ??= this.#bindRetrying('relisten')
			.then(
				() => undefined,
				// Logged; the host's next SIGUSR2 tries again.
				() => undefined,
			)
			.finally(() => {
				this.#relistening = undefined
			})
		return this.#relistening
	}
}
