/**
 * A `TerminalSession` over one `terminal` connection that has answered `ready`. Input, resize and
 * kill go out as client frames; `data` frames reach `onData`; `exited` settles exactly once, with
 * the guest's `exit` event or, if the connection ends without one, `exitCode: -1` — unless the
 * guest itself died (`GuestLiveness`), when it REJECTS with the `GuestDiedError`. `close()` is
 * the owner's teardown: SIGKILL, wait (bounded) for the exit, then close and await the socket.
 */

import { settleWithin } from '../../common/bounded-promise.js'
import type { TerminalExit, TerminalSession, TerminalSize } from '../../contract/sandbox.js'
import { binaryEventBytes } from '../../wire/binary-frame.js'
import type { FrameChannel } from './frame-channel.js'
import type { GuestLiveness } from './guest-liveness.js'
import { ListenerSet } from './listener-set.js'

const TERMINAL_SIGNALS = new Set(['SIGTERM', 'SIGKILL', 'SIGINT', 'SIGHUP'])
/** How long `close()` waits for the guest's exit event after SIGKILL before dropping the socket. */
const CLOSE_EXIT_WAIT_MS = 2000

export function terminalSignal(signal: string | undefined): string {
	return signal !== undefined && TERMINAL_SIGNALS.has(signal) ? signal : 'SIGTERM'
}

/** A PTY terminal in the guest, carried as frames over one agent connection. */
export class AgentTerminalSession implements TerminalSession {
	readonly exited: Promise<TerminalExit>
	readonly #channel: FrameChannel
	readonly #data = new ListenerSet<string>((chunk) => chunk.length)
	readonly #liveness: GuestLiveness | undefined
	#resolveExit: (exit: TerminalExit) => void = () => {}
	#rejectExit: (error: Error) => void = () => {}
	#exit: TerminalExit | undefined
	#ended = false
	#closing = false

	constructor(channel: FrameChannel, liveness?: GuestLiveness) {
		this.#channel = channel
		this.#liveness = liveness
		this.exited = new Promise((resolve, reject) => {
			this.#resolveExit = resolve
			this.#rejectExit = reject
		})
		// A caller that never looks at `exited` must not see an unhandled rejection.
		this.exited.catch(() => undefined)
		void this.#pump()
	}

	write(data: string): void {
		if (this.#ended) return
		this.#channel.send({ type: 'input', data })
	}

	resize(size: TerminalSize): void {
		if (this.#ended) return
		this.#channel.send({ type: 'resize', cols: size.cols, rows: size.rows })
	}

	onData(listener: (chunk: string) => void): () => void {
		return this.#data.subscribe(listener)
	}

	kill(signal?: string): void {
		if (this.#ended) return
		this.#channel.send({ type: 'kill', signal: terminalSignal(signal) })
	}

	/** Kills the terminal's process tree and resolves once the exit is observed and the socket closed. */
	async close(): Promise<TerminalExit> {
		this.#closing = true
		if (!this.#ended && !this.#channel.isClosed) {
			this.kill('SIGKILL')
			await settleWithin(
				this.exited.catch(() => undefined),
				CLOSE_EXIT_WAIT_MS,
			)
		}
		// Closing the connection makes the guest kill whatever is left in the terminal's session.
		this.#channel.destroy()
		await this.#channel.closed
		this.#settle({ exitCode: -1 })
		return this.#exit ?? { exitCode: -1 }
	}

	#settle(exit: TerminalExit): void {
		if (this.#ended) return
		this.#ended = true
		this.#exit = exit
		this.#resolveExit(exit)
	}

	/** The connection ended without an exit event: the guest's death, or `exitCode: -1`. */
	async #lost(): Promise<void> {
		const died = this.#closing || this.#ended ? undefined : await this.#liveness?.explain()
		if (died === undefined || this.#ended) {
			this.#settle({ exitCode: -1 })
			return
		}
		this.#ended = true
		this.#rejectExit(died)
	}

	async #pump(): Promise<void> {
		for (;;) {
			const item = await this.#channel.read()
			if (item.kind === 'closed') {
				await this.#lost()
				return
			}
			if (item.kind !== 'frame') continue
			const event = item.message
			const bytes = binaryEventBytes(event)
			if (event.type === 'data' && bytes) {
				// The guest decodes across reads, so each binary chunk is whole UTF-8 text.
				this.#data.emit(bytes.toString('utf8'))
			} else if (event.type === 'data' && typeof event.data === 'string') {
				this.#data.emit(event.data)
			} else if (event.type === 'exit') {
				const exitCode = typeof event.exitCode === 'number' ? event.exitCode : -1
				this.#settle(
					typeof event.signal === 'number' ? { exitCode, signal: event.signal } : { exitCode },
				)
			} else if (event.type === 'error') {
				this.#settle({ exitCode: -1 })
			}
		}
	}
}
