/**
 * Putting the workspace's writes on its disk: `sync -f <workspace>` (syncfs of
 * the filesystem holding it — never a bare `sync`, which would wait on every filesystem the node
 * has), or the `NAMZU_AGENT_FLUSH_COMMAND` test override via `/bin/sh -c` with the workspace as
 * `$1`. Bounded: past the timeout the program is SIGKILLed and the answer is `flush_unconfirmed`.
 * Whether the agent can flush at all is decided once per process (`flushSupported`).
 */

import { spawn } from 'node:child_process'
import { accessSync, constants, statSync } from 'node:fs'
import { delimiter, isAbsolute, join } from 'node:path'
import { AGENT_REFUSAL } from '../../wire/refusals.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { isIntegerIn } from '../handler/value-checks.js'
import { childEnvironment } from '../process/child-env.js'

export const SYNC_PROGRAM = 'sync'
const SHELL = '/bin/sh'
/** Longest `timeoutMs` a flush request may name. */
export const MAX_FLUSH_TIMEOUT_MS = 10 * 60_000
const MAX_DETAIL_CHARS = 512

function isExecutableFile(path: string): boolean {
	try {
		if (!statSync(path).isFile()) return false
		accessSync(path, constants.X_OK)
		return true
	} catch {
		return false
	}
}

/** Whether `program` resolves to an executable file through `pathVariable` (or is one, if absolute). */
export function isOnPath(program: string, pathVariable: string | undefined): boolean {
	if (isAbsolute(program)) return isExecutableFile(program)
	return (pathVariable ?? '')
		.split(delimiter)
		.filter((dir) => dir !== '')
		.some((dir) => isExecutableFile(join(dir, program)))
}

/** The program a flush runs: `sync`, or the override's first word (run by `/bin/sh`). */
export function flushProgram(override: string | undefined): string {
	if (override === undefined || override === '') return SYNC_PROGRAM
	return override.trim().split(/\s+/)[0] ?? SYNC_PROGRAM
}

let supported: boolean | undefined

/** Checked once per process: Linux, and the flush program (and `/bin/sh` for an override) exists. */
export function flushSupported(
	env: Readonly<Record<string, string | undefined>> = process.env,
): boolean {
	if (supported === undefined) {
		const override = env.NAMZU_AGENT_FLUSH_COMMAND
		const program = flushProgram(override)
		const shellOk = override === undefined || override === '' || isExecutableFile(SHELL)
		supported = process.platform === 'linux' && shellOk && isOnPath(program, env.PATH)
	}
	return supported
}

/** A request's `timeoutMs`, or `fallback`; anything but an integer 1..MAX is refused. */
export function resolveFlushTimeoutMs(requested: unknown, fallback: number): number {
	if (requested === undefined) return fallback
	if (!isIntegerIn(requested, { min: 1, max: MAX_FLUSH_TIMEOUT_MS })) {
		throw new OpRefusal(
			AGENT_REFUSAL.flush_invalid_timeout,
			`timeoutMs must be an integer 1..${MAX_FLUSH_TIMEOUT_MS}, got ${JSON.stringify(requested)}`,
		)
	}
	return requested
}

export interface FlushRun {
	readonly workspace: string
	readonly timeoutMs: number
	readonly command?: string
}

/** Runs the flush; resolves with its duration, or throws `flush_unconfirmed` with the reason. */
export function runFlush(run: FlushRun): Promise<{ readonly durationMs: number }> {
	const startedAt = performance.now()
	const [file, args] =
		run.command === undefined
			? [SYNC_PROGRAM, ['-f', run.workspace]]
			: [SHELL, ['-c', run.command, 'flush', run.workspace]]
	return new Promise((resolve, reject) => {
		let stderr = ''
		let settled = false
		const child = spawn(file, args, {
			env: childEnvironment(undefined),
			stdio: ['ignore', 'ignore', 'pipe'],
		})
		const finish = (error?: string) => {
			if (settled) return
			settled = true
			clearTimeout(timer)
			if (error === undefined) resolve({ durationMs: Math.round(performance.now() - startedAt) })
			else reject(new OpRefusal(AGENT_REFUSAL.flush_unconfirmed, error))
		}
		const timer = setTimeout(() => {
			child.kill('SIGKILL')
			finish(`the flush did not finish within ${run.timeoutMs} ms`)
		}, run.timeoutMs)
		child.stderr?.on('data', (chunk: Buffer) => {
			if (stderr.length < MAX_DETAIL_CHARS) stderr += chunk.toString('utf8')
		})
		child.once('error', (error) => finish(`the flush could not run: ${error.message}`))
		child.once('close', (code, signal) => {
			if (code === 0) return finish()
			const detail = stderr.trim().slice(0, MAX_DETAIL_CHARS)
			finish(
				`the flush exited with ${code === null ? `signal ${signal}` : `status ${code}`}${detail === '' ? '' : `: ${detail}`}`,
			)
		})
	})
}
