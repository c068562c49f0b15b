/**
 * A `TerminalSession` over one `terminal` connection that has answered `ready`. Input, resize and
 * kill go out as client frames; `data` frames reach `onData`; `exited` resolves exactly once, with
 * the guest's `exit` event or, if the connection ends without one, `exitCode: -1`. `close()` is
 * the owner's teardown: SIGKILL, wait (bounded) for the exit, then close and await the socket.
 */
import type { TerminalExit, TerminalSession, TerminalSize } from '../../contract/sandbox.js'
import type { FrameChannel } from './frame-channel.js'
import { ListenerSet } from './listener-set.js'

const TERMINAL_SIGNALS = new Set(['SIGTERM', 'SIGKILL', 'SIGINT', 'SIGHUP'])
/** How long `close()` waits for the guest's exit event after SIGKILL before dropping the socket. */
const CLOSE_EXIT_WAIT_MS = 2000

export function terminalSignal(signal: string | undefined): string {
	return signal !== undefined && TERMINAL_SIGNALS.has(signal) ? signal : 'SIGTERM'
}

export class AgentTerminalSession implements TerminalSession {
	readonly exited: Promise<TerminalExit>
	readonly #channel: FrameChannel
	readonly #data = new ListenerSet<string>((chunk) => chunk.length)
	#resolveExit: (exit: TerminalExit) => void = () => {}
	#exit: TerminalExit | undefined

	constructor(channel: FrameChannel) {
		this.#channel = channel
		this.exited = new Promise((resolve) => {
			this.#resolveExit = resolve
		})
		void this.#pump()
	}

	write(data: string): void {
		if (this.#exit) return
		this.#channel.send({ type: 'input', data })
	}

	resize(size: TerminalSize): void {
		if (this.#exit) return
		this.#channel.send({ type: 'resize', cols: size.cols, rows: size.rows })
	}

	onData(listener: (chunk: string) => void): () => void {
		return this.#data.subscribe(listener)
	}

	kill(signal?: string): void {
		if (this.#exit) return
		this.#channel.send({ type: 'kill', signal: terminalSignal(signal) })
	}

	/** Kills the terminal's process tree and resolves once the exit is observed and the socket closed. */
	async close(): Promise<TerminalExit> {
		if (!this.#exit && !this.#channel.isClosed) {
			this.kill('SIGKILL')
			let timer: NodeJS.Timeout | undefined
			await Promise.race([
				this.exited,
				new Promise((resolve) => {
					timer = setTimeout(resolve, CLOSE_EXIT_WAIT_MS)
				}),
			])
			clearTimeout(timer)
		}
		// Closing the connection makes the guest kill whatever is left in the terminal's session.
		this.#channel.destroy()
		await this.#channel.closed
		this.#settle({ exitCode: -1 })
		return this.exited
	}

	#settle(exit: TerminalExit): void {
		if (this.#exit) return
		this.#exit = exit
		this.#resolveExit(exit)
	}

	async #pump(): Promise<void> {
		for (;;) {
			const item = await this.#channel.read()
			if (item.kind === 'closed') {
				this.#settle({ exitCode: -1 })
				return
			}
			if (item.kind !== 'frame') continue
			const event = item.message
			if (event.type === 'data' && typeof event.data === 'string') {
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
