/**
 * Where the stderr of a sandbox that outlives its host goes. Not a plain file: bwrap's PID 1 in the
 * sandbox runs as the workload's uid and is dumpable, so the workload can take its descriptor 2
 * (`pidfd_getfd`) and write without end into whatever that is — a file on the host's disk would
 * grow outside every bound the sandbox has. Instead the sandbox writes into a pipe read by coreutils
 * `tail -c`, started detached from the host: it holds only the last bytes in memory and writes
 * them to the log file once every writer is gone, i.e. when the sandbox has ended.
 */

import { spawn } from 'node:child_process'
import { closeSync, openSync } from 'node:fs'
import type { Writable } from 'node:stream'
import { settleWithin } from '../../../common/bounded-promise.js'

export const DEFAULT_TAIL_PATH = '/usr/bin/tail'
/** What a kept-alive sandbox's stderr log holds at most. */
export const KEPT_STDERR_BYTES = 64 * 1024
/** How long an exit report waits for the keeper to write the log once the sandbox is gone. */
const KEEPER_FLUSH_WAIT_MS = 1_000

export interface StderrLogKeeper {
	/** The pipe's write end, to hand a child as its stderr. */
	readonly input: Writable
	/** Closes the host's copy of the write end (the child has its own). */
	release(): void
	/** Settles once the log is written or after a short bound; never rejects. */
	flushed(): Promise<void>
}

export function startStderrLogKeeper(
	logPath: string,
	tailPath: string = DEFAULT_TAIL_PATH,
): StderrLogKeeper {
	const log = openSync(logPath, 'w', 0o600)
	let keeper: ReturnType<typeof spawn>
	try {
		keeper = spawn(tailPath, ['-c', String(KEPT_STDERR_BYTES)], {
			detached: true,
			stdio: ['pipe', log, 'ignore'],
		})
	} finally {
		closeSync(log)
	}
	keeper.unref()
	const input = keeper.stdin
	if (input === null) throw new Error('stderr log keeper started without a stdin pipe')
	// A keeper that fails to start must not take the launch down with an EPIPE on the host side.
	input.on('error', () => undefined)
	const done = new Promise<void>((resolve) => {
		keeper.once('exit', () => resolve())
		keeper.once('error', () => resolve())
	})
	return {
		input,
		release: () => {
			input.destroy()
		},
		flushed: async () => {
			await settleWithin(done, KEEPER_FLUSH_WAIT_MS)
		},
	}
}
