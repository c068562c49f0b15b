/**
 * What the stateful tools hold for one sandbox on the host: a long command's `timeout_ms` timer
 * and the one attachment a tty command's input goes through (everything else about a long command
 * is in the guest, under its exec id); the live watches `watch` polls; the ports `expose_port`
 * serves. `close()` lets go of all of it.
 */
import type { SandboxExposedPort, SessionTerminal } from '../contract-entry.js'
import { WatchState } from './watch-state.js'

/** Timers and input attachments of one sandbox's long commands, its watches and exposed ports. */
export class BackgroundExecState {
	readonly watches = new WatchState()
	/** `expose_port`'s exposures by guest port: asking again answers the same one. */
	readonly exposures = new Map<number, Promise<SandboxExposedPort>>()
	readonly #timers = new Map<string, NodeJS.Timeout>()
	readonly #inputs = new Map<string, SessionTerminal>()

	armTimeout(execId: string, timeoutMs: number, kill: () => Promise<unknown>): void {
		const timer = setTimeout(() => {
			this.#timers.delete(execId)
			kill().catch(() => undefined)
		}, timeoutMs)
		timer.unref()
		this.#timers.set(execId, timer)
	}

	input(execId: string): SessionTerminal | undefined {
		return this.#inputs.get(execId)
	}

	holdInput(execId: string, terminal: SessionTerminal): void {
		// The attachment's own output is read through exec_read instead; nothing is held for it.
		terminal.onData(() => undefined)
		this.#inputs.set(execId, terminal)
		terminal.exited.then(
			() => this.#forget(execId, terminal),
			() => this.#forget(execId, terminal),
		)
	}

	#forget(execId: string, terminal: SessionTerminal): void {
		if (this.#inputs.get(execId) === terminal) this.#inputs.delete(execId)
	}

	/** Clears the timers and detaches the input attachments; the commands keep running. */
	async close(): Promise<void> {
		this.watches.close()
		const exposures = [...this.exposures.values()]
		this.exposures.clear()
		await Promise.allSettled(exposures.map(async (exposure) => (await exposure).close()))
		for (const timer of this.#timers.values()) clearTimeout(timer)
		this.#timers.clear()
		const inputs = [...this.#inputs.values()]
		this.#inputs.clear()
		await Promise.allSettled(inputs.map((terminal) => terminal.detach()))
	}
}
