/**
 * The client frames of every terminal-shaped stream, handled once for the connection-bound
 * `terminal` and for an attachment to a session: `input` (a program that is not taking more stops
 * the connection being read until it drains, so backpressure reaches the host), `resize`, `kill`
 * (an allow-listed signal, else SIGTERM); `heartbeat` and anything unknown are accepted and
 * ignored.
 */
import { type SessionSignal, sessionSignal } from '../../wire/sessions.js'
import { parseTerminalSize, type TerminalSize } from './terminal-request.js'

/** What a terminal's client frames can ask of the program behind it. */
export interface TerminalFrameTarget {
	/** Writes keyboard input; false when the program is not taking more yet. */
	input(data: string): boolean
	/** Calls `resume` once input may be written again (asked only after `input` said false). */
	onInputDrain(resume: () => void): void
	resize(size: TerminalSize): void
	kill(signal: SessionSignal): void
}

/** The connection the frames arrive on, paused while the program's input is full. */
export interface TerminalFrameSource {
	pause(): void
	resume(): void
}

export function handleTerminalClientFrame(
	message: Record<string, unknown>,
	target: TerminalFrameTarget,
	source: TerminalFrameSource,
): void {
	switch (message.type) {
		case 'input':
			if (typeof message.data !== 'string') return
			if (!target.input(message.data)) {
				source.pause()
				target.onInputDrain(() => source.resume())
			}
			return
		case 'resize': {
			let size: TerminalSize
			try {
				size = parseTerminalSize(message)
			} catch {
				return
			}
			target.resize(size)
			return
		}
		case 'kill':
			target.kill(sessionSignal(message.signal))
			return
		default:
			return
	}
}
