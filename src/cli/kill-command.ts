/**
 * `namzu-sandbox kill HANDLE`: ends one detached command and nothing else — its kept-alive
 * sandbox and every other command in it keep running. An execution is cancelled (its whole
 * process group: SIGTERM, then SIGKILL after the guest's grace window); a session gets the
 * signal named (default SIGKILL, as the library's `killSession`).
 */
import { CliUsageError } from './cli-errors.js'
import { type CliHandle, formatCliHandle } from './cli-handle.js'
import { openKeptAlive, withInterrupt } from './kept-alive-context.js'

/** What `--signal` may say for an execution: the cancel is SIGTERM then SIGKILL, whatever is named. */
const EXECUTION_SIGNALS = ['SIGTERM', 'SIGKILL']

export function killCommand(handle: CliHandle, signal?: string): Promise<number> {
	return withInterrupt(async (abortSignal) => {
		if (handle.kind === 'sandbox') throw new CliUsageError('kill needs SANDBOX/EXECUTION')
		const sandbox = await openKeptAlive(handle.sandboxId, abortSignal)
		const shown = formatCliHandle(handle)
		if (handle.kind === 'session') {
			const killed = await sandbox.killSession(handle.sessionId, {
				...(signal === undefined ? {} : { signal }),
				abortSignal,
			})
			process.stderr.write(
				`namzu-sandbox: ${shown}: ${killed.signalled > 0 ? `sent ${signal ?? 'SIGKILL'}` : `already ${killed.state}`}\n`,
			)
			return 0
		}
		if (signal !== undefined && !EXECUTION_SIGNALS.includes(signal))
			throw new CliUsageError(
				`--signal ${signal.slice(3)}: a detached execution is ended with TERM then KILL (its whole process group); other signals reach only sessions`,
			)
		const reply = await sandbox.cancelExecution(handle.executionId, { signal: abortSignal })
		const ended = reply.started ? `ended (${reply.state})` : 'cancelled before it started'
		process.stderr.write(`namzu-sandbox: ${shown}: ${ended}; the sandbox keeps running\n`)
		return 0
	})
}
