/**
 * `namzu-sandbox kill HANDLE`: ends one detached command and nothing else — its kept-alive
 * sandbox and every other command in it keep running. Without `--signal` an execution is
 * cancelled (its whole process group: SIGTERM, then SIGKILL after the guest's grace window); with
 * it, exactly that signal goes to the process group, as `docker kill --signal` (the command may
 * handle it and run on). A session gets the signal named (default SIGKILL, as `killSession`).
 */
import { isExecutionSignal } from '../wire/execution-input.js'
import { CliUsageError } from './cli-errors.js'
import { type CliHandle, formatCliHandle } from './cli-handle.js'
import { openKeptAlive, withInterrupt } from './kept-alive-context.js'

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
		if (signal !== undefined) {
			// The parser allows only these; the check narrows the type.
			if (!isExecutionSignal(signal)) throw new CliUsageError(`--signal ${signal}: not a signal`)
			const attached = await sandbox.attachProcess(handle.executionId, { signal: abortSignal })
			try {
				await attached.kill(signal, { signal: abortSignal })
			} finally {
				attached.detach()
			}
			process.stderr.write(`namzu-sandbox: ${shown}: sent ${signal}; the sandbox keeps running\n`)
			return 0
		}
		const reply = await sandbox.cancelExecution(handle.executionId, { signal: abortSignal })
		const ended = reply.started ? `ended (${reply.state})` : 'cancelled before it started'
		process.stderr.write(`namzu-sandbox: ${shown}: ${ended}; the sandbox keeps running\n`)
		return 0
	})
}
