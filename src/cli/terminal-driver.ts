/**
 * Connects the local terminal to a sandbox terminal: raw mode, keystrokes out, output in, SIGWINCH
 * resizes. With a detach key (Ctrl-], byte 0x1d, for persistent sessions) pressing it ends the
 * attachment and leaves the program running. Resolves with how it ended.
 */
import type { TerminalExit, TerminalSession, TerminalSize } from '../contract/sandbox.js'

/** Ctrl-] — the same key telnet uses to escape a session. */
export const DETACH_KEY = 0x1d

export type TerminalOutcome =
	| { readonly kind: 'exited'; readonly exit: TerminalExit }
	| { readonly kind: 'detached'; readonly reason: string }

export interface DriveOptions {
	/** Called when the user presses the detach key; omitted ⇒ the key is just input. */
	readonly detach?: () => Promise<void>
}

export function localTerminalSize(): TerminalSize {
	return {
		cols: Math.max(1, Math.min(1000, process.stdout.columns || 80)),
		rows: Math.max(1, Math.min(1000, process.stdout.rows || 24)),
	}
}

/** Index of the detach key in `data`, or -1 (pure). */
export function detachKeyIndex(data: Uint8Array): number {
	return data.indexOf(DETACH_KEY)
}

/** The exit code a shell would report for a terminal's exit (pure). */
export function terminalExitCode(exit: TerminalExit): number {
	return exit.signal ? 128 + exit.signal : exit.exitCode
}

export async function driveTerminal(
	terminal: TerminalSession,
	options: DriveOptions = {},
): Promise<TerminalOutcome> {
	const stdin = process.stdin
	const wasRaw = stdin.isTTY ? stdin.isRaw : false
	let detaching: Promise<TerminalOutcome> | undefined
	let resolveDetached: (outcome: TerminalOutcome) => void = () => {}
	const detached = new Promise<TerminalOutcome>((resolve) => {
		resolveDetached = resolve
	})
	const unsubscribe = terminal.onData((chunk) => process.stdout.write(chunk))
	const onInput = (data: Buffer) => {
		const at = options.detach ? detachKeyIndex(data) : -1
		if (at < 0 || !options.detach) {
			terminal.write(data.toString('utf8'))
			return
		}
		if (at > 0) terminal.write(data.subarray(0, at).toString('utf8'))
		const detach = options.detach
		detaching ??= detach().then(() => ({ kind: 'detached', reason: 'detach key' }) as const)
		void detaching.then(resolveDetached, () =>
			resolveDetached({ kind: 'detached', reason: 'detach key' }),
		)
	}
	const onResize = () => terminal.resize(localTerminalSize())
	if (stdin.isTTY) stdin.setRawMode(true)
	stdin.on('data', onInput)
	stdin.resume()
	process.stdout.on('resize', onResize)
	process.on('SIGWINCH', onResize)
	try {
		const exited = terminal.exited.then(
			(exit): TerminalOutcome => ({ kind: 'exited', exit }),
			(error: unknown): TerminalOutcome => {
				// Our own detach ends the attachment too (`exited` rejects as closed): it was the key.
				if (detaching !== undefined) return { kind: 'detached', reason: 'detach key' }
				const reason =
					error !== null && typeof error === 'object' && 'reason' in error
						? String(error.reason)
						: error instanceof Error
							? error.message
							: String(error)
				return { kind: 'detached', reason }
			},
		)
		return await Promise.race([exited, detached])
	} finally {
		unsubscribe()
		stdin.off('data', onInput)
		stdin.pause()
		process.stdout.off('resize', onResize)
		process.off('SIGWINCH', onResize)
		if (stdin.isTTY) stdin.setRawMode(wasRaw)
	}
}
