/**
 * The host programs the hardened launch runs as root: util-linux `setpriv`, `mount` and `umount`,
 * and GNU `find`, `chown` and `chmod` for handing a caller's workspace to the sandbox uid and back
 * (they walk arbitrarily deep trees with descriptor-relative calls, which Node cannot). Paths are
 * fixed, never looked up on PATH.
 */
import { spawn } from 'node:child_process'
import { constants } from 'node:fs'
import { access } from 'node:fs/promises'
import { LocalHelperUnavailableError, LocalHostToolError } from '../machine-errors.js'

export const HOST_TOOLS = {
	setpriv: '/usr/bin/setpriv',
	mount: '/usr/bin/mount',
	umount: '/usr/bin/umount',
	find: '/usr/bin/find',
	chown: '/usr/bin/chown',
	chmod: '/usr/bin/chmod',
} as const

export type HostTool = keyof typeof HOST_TOOLS

const STDERR_LIMIT = 4096

export async function assertHostTool(tool: HostTool, purpose: string): Promise<void> {
	await access(HOST_TOOLS[tool], constants.X_OK).catch((error: unknown) => {
		throw new LocalHelperUnavailableError(HOST_TOOLS[tool], purpose, { cause: error })
	})
}

export interface ToolRun {
	readonly code: number | null
	readonly signal: NodeJS.Signals | null
	/** The first bytes of stderr. */
	readonly stderr: string
}

export interface ToolOptions {
	/** Descriptor stdout is written to (a file the caller opened); discarded without one. */
	readonly stdoutFd?: number
	/** A descriptor the child gets as its fd 3 (a device it names as `/proc/self/fd/3`). */
	readonly fd3?: number
	readonly signal?: AbortSignal
}

/** Runs a host tool to completion. */
export function runHostTool(
	tool: HostTool,
	args: readonly string[],
	options: ToolOptions = {},
): Promise<ToolRun> {
	return runProgram(HOST_TOOLS[tool], args, options)
}

/**
 * Runs the program at `path` (absolute, never looked up) to completion. An abort kills it outright
 * (SIGKILL: a program that ignores SIGTERM, or waits on something that never comes, must not
 * outlive a caller that gave up on it) and rejects with the signal's reason only once it has exited.
 */
export function runProgram(
	path: string,
	args: readonly string[],
	options: ToolOptions = {},
): Promise<ToolRun> {
	const { signal } = options
	if (signal?.aborted) return Promise.reject(signal.reason)
	return new Promise((resolve, reject) => {
		const child = spawn(path, [...args], {
			stdio: [
				'ignore',
				options.stdoutFd ?? 'ignore',
				'pipe',
				...(options.fd3 === undefined ? [] : [options.fd3]),
			],
		})
		const onAbort = () => child.kill('SIGKILL')
		signal?.addEventListener('abort', onAbort, { once: true })
		let stderr = ''
		child.stderr?.on('data', (chunk: Buffer) => {
			if (stderr.length < STDERR_LIMIT) stderr += chunk.toString('utf8').slice(0, STDERR_LIMIT)
		})
		child.once('error', (error) => {
			signal?.removeEventListener('abort', onAbort)
			reject(error)
		})
		// Its exit, not its pipes' close: a descendant it left may hold stderr open.
		child.once('exit', () => {
			if (signal?.aborted) reject(signal.reason)
		})
		child.once('close', (code, exitSignal) => {
			signal?.removeEventListener('abort', onAbort)
			resolve({ code, signal: exitSignal, stderr: stderr.trim() })
		})
	})
}

/** Runs a host tool and rejects with its stderr unless it exits 0. */
export function runHostToolOrThrow(
	tool: HostTool,
	args: readonly string[],
	options: ToolOptions = {},
): Promise<void> {
	return runProgramOrThrow(HOST_TOOLS[tool], args, options)
}

/** Runs the program at `path` and rejects with its stderr unless it exits 0. */
export async function runProgramOrThrow(
	path: string,
	args: readonly string[],
	options: ToolOptions = {},
): Promise<void> {
	const run = await runProgram(path, args, options)
	if (run.code !== 0) throw new LocalHostToolError(path, args, run)
}
