/**
 * What the long-command tools hold for one sandbox on the host: a command's `timeout_ms` timer,
 * and the one attachment a tty command's input goes through. Everything else about a long command
 * is in the guest, under its exec id.
 */
import type { SessionTerminal } from '../contract-entry.js'

/** Timers and input attachments of one sandbox's long commands. */
export class BackgroundExecState {
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
		for (const timer of this.#timers.values()) clearTimeout(timer)
		this.#timers.clear()
		const inputs = [...this.#inputs.values()]
		this.#inputs.clear()
		await Promise.allSettled(inputs.map((terminal) => terminal.detach()))
	}
}
