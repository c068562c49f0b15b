/**
 * `namzu-sandbox run` on a terminal (stdin and stdout both TTYs), as `docker run -it`: the command
 * gets a PTY, keystrokes are forwarded live (Ctrl-C reaches it as SIGINT, Ctrl-D as EOF) and its
 * output is written as it comes, retaining nothing. `--timeout-ms` kills it (exit 124); a signal
 * to the CLI itself (SIGTERM, SIGHUP, SIGINT from outside the terminal) kills it (exit 130).
 */
import type { Sandbox } from '../contract/sandbox.js'
import { EXIT_CODES } from './parse-args.js'
import { driveTerminal, localTerminalSize, terminalExitCode } from './terminal-driver.js'

export interface TerminalRun {
	readonly command: string
	readonly args: readonly string[]
	readonly timeoutMs?: number
	readonly env?: Readonly<Record<string, string>>
	/** Default the workspace root. */
	readonly cwd?: string
}

export async function runOnTerminal(
	sandbox: Sandbox,
	run: TerminalRun,
	signal: AbortSignal,
): Promise<number> {
	if (!sandbox.openTerminal) throw new Error('this sandbox offers no terminal')
	const terminal = await sandbox.openTerminal({
		command: run.command,
		args: run.args,
		cwd: run.cwd ?? sandbox.rootDir,
		size: localTerminalSize(),
		env: { TERM: process.env.TERM || 'xterm-256color', ...run.env },
		signal,
	})
	let ended: number | undefined
	const end = (code: number) => {
		ended ??= code
		terminal.kill('SIGKILL')
	}
	const onAbort = () => end(EXIT_CODES.interrupted)
	signal.addEventListener('abort', onAbort, { once: true })
	const timer =
		run.timeoutMs === undefined
			? undefined
			: setTimeout(() => end(EXIT_CODES.timedOut), run.timeoutMs)
	try {
		const outcome = await driveTerminal(terminal)
		if (ended === EXIT_CODES.timedOut) {
			process.stderr.write(`\r\nnamzu-sandbox: timed out after ${run.timeoutMs} ms\r\n`)
		}
		if (ended !== undefined) return ended
		return outcome.kind === 'exited' ? terminalExitCode(outcome.exit) : EXIT_CODES.refused
	} finally {
		clearTimeout(timer)
		signal.removeEventListener('abort', onAbort)
	}
}
