/**
 * `namzu-sandbox attach HANDLE`, from any process: for `<sandbox>/<execution>` it prints the
 * execution's retained output from the start and follows it to its end, exiting with its exit
 * code (Ctrl-C only detaches: it never signals the command); for `<sandbox>/session:<id>` it
 * attaches the terminal — raw mode, resize, Ctrl-] detaches — and exits with the program's code.
 */
import { ExecutionDetachedError, type SessionTerminal } from '../contract-entry.js'
import { CliUsageError } from './cli-errors.js'
import { type CliHandle, formatCliHandle } from './cli-handle.js'
import { exitCodeOf } from './exit-code.js'
import { openKeptAlive, withInterrupt } from './kept-alive-context.js'
import { EXIT_CODES } from './parse-args.js'
import { driveTerminal, localTerminalSize, terminalExitCode } from './terminal-driver.js'

function writeOutput(stream: 'stdout' | 'stderr', data: string): void {
	;(stream === 'stdout' ? process.stdout : process.stderr).write(data)
}

export async function attachExecutionHandle(
	sandboxId: string,
	executionId: string,
): Promise<number> {
	return withInterrupt(async (signal) => {
		const sandbox = await openKeptAlive(sandboxId, signal)
		try {
			const result = await sandbox.attachExecution(executionId, {
				fromOffset: 0,
				signal,
				onOutput: ({ stream, data }) => writeOutput(stream, data),
			})
			if (result.stdoutTruncated || result.stderrTruncated) {
				process.stderr.write('namzu-sandbox: the start of the output was no longer retained\n')
			}
			return exitCodeOf(result)
		} catch (error) {
			if (error instanceof ExecutionDetachedError) {
				process.stderr.write(
					`namzu-sandbox: detached (${error.detachReason}); it keeps running — re-attach with: namzu-sandbox attach ${sandboxId}/${executionId}\n`,
				)
				return signal.aborted ? EXIT_CODES.interrupted : EXIT_CODES.detached
			}
			throw error
		}
	})
}

/** Drives an attached session terminal and turns its end into an exit code, with the hint. */
export async function followSessionTerminal(
	terminal: SessionTerminal,
	handle: CliHandle,
): Promise<number> {
	const outcome = await driveTerminal(terminal, { detach: () => terminal.detach() })
	if (outcome.kind === 'exited') return terminalExitCode(outcome.exit)
	process.stderr.write(
		`\r\nnamzu-sandbox: detached (${outcome.reason}); it keeps running — re-attach with: namzu-sandbox attach ${formatCliHandle(handle)}\r\n`,
	)
	return outcome.reason === 'detach key' ? 0 : EXIT_CODES.detached
}

export async function attachSessionHandle(sandboxId: string, sessionId: string): Promise<number> {
	const sandbox = await openKeptAlive(sandboxId)
	const terminal = await sandbox.attachTerminal(sessionId, {
		fromOffset: 0,
		size: localTerminalSize(),
	})
	return followSessionTerminal(terminal, { kind: 'session', sandboxId, sessionId })
}

export function attachCommand(handle: CliHandle): Promise<number> {
	switch (handle.kind) {
		case 'execution':
			return attachExecutionHandle(handle.sandboxId, handle.executionId)
		case 'session':
			return attachSessionHandle(handle.sandboxId, handle.sessionId)
		case 'sandbox':
			throw new CliUsageError(
				`attach needs SANDBOX/EXECUTION or SANDBOX/session:ID, not a bare sandbox; list them with: namzu-sandbox sessions ${handle.sandboxId}`,
			)
	}
}
