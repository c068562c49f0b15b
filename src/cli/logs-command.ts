/**
 * `namzu-sandbox logs HANDLE [--follow]`: prints retained output without attaching or signalling.
 * A session is read with `readSession` (a read displaces no attached terminal); with `--follow`
 * the reads repeat until the program ends. An execution is observed through `attachExecution`
 * (an observer, never a signal): without `--follow` the observation stops once output has been
 * quiet for `LOGS_QUIET_MS`; with it, at the execution's end. Exits 0.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { ExecutionDetachedError } from '../contract-entry.js'
import { CliUsageError } from './cli-errors.js'
import type { CliHandle } from './cli-handle.js'
import { openKeptAlive, withInterrupt } from './kept-alive-context.js'

/** Without --follow, an execution's output is taken as complete after this much silence. */
export const LOGS_QUIET_MS = 300
/** Pause between session reads under --follow. */
export const LOGS_POLL_MS = 200

async function sessionLogs(
	sandboxId: string,
	sessionId: string,
	follow: boolean,
	signal: AbortSignal,
): Promise<number> {
	const sandbox = await openKeptAlive(sandboxId, signal)
	let fromOffset: number | undefined
	for (;;) {
		const read = await sandbox.readSession(sessionId, {
			...(fromOffset === undefined ? {} : { fromOffset }),
			signal,
		})
		if (read.droppedBytes > 0 && fromOffset === undefined) {
			process.stderr.write(`namzu-sandbox: ${read.droppedBytes} earlier bytes were not retained\n`)
		}
		process.stdout.write(read.chunk)
		fromOffset = read.nextOffset
		if (!follow || read.status !== 'running' || signal.aborted) return 0
		// An interrupt cuts the pause short; the next read, under the same signal, ends the loop.
		await sleep(LOGS_POLL_MS, undefined, { signal }).catch(() => undefined)
	}
}

async function executionLogs(
	sandboxId: string,
	executionId: string,
	follow: boolean,
	signal: AbortSignal,
): Promise<number> {
	const sandbox = await openKeptAlive(sandboxId, signal)
	const stop = new AbortController()
	let quiet: NodeJS.Timeout | undefined
	const armQuiet = () => {
		if (follow) return
		clearTimeout(quiet)
		quiet = setTimeout(() => stop.abort(), LOGS_QUIET_MS)
	}
	armQuiet()
	try {
		await sandbox.attachExecution(executionId, {
			fromOffset: 0,
			signal: AbortSignal.any([signal, stop.signal]),
			onOutput: ({ stream, data }) => {
				;(stream === 'stdout' ? process.stdout : process.stderr).write(data)
				armQuiet()
			},
		})
	} catch (error) {
		if (!(error instanceof ExecutionDetachedError)) throw error
	} finally {
		clearTimeout(quiet)
	}
	return 0
}

export function logsCommand(handle: CliHandle, follow: boolean): Promise<number> {
	return withInterrupt((signal) => {
		switch (handle.kind) {
			case 'session':
				return sessionLogs(handle.sandboxId, handle.sessionId, follow, signal)
			case 'execution':
				return executionLogs(handle.sandboxId, handle.executionId, follow, signal)
			case 'sandbox':
				throw new CliUsageError(
					`logs needs SANDBOX/EXECUTION or SANDBOX/session:ID, not a bare sandbox; list them with: namzu-sandbox sessions ${handle.sandboxId}`,
				)
		}
	})
}
