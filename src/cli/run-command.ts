import { mkdir } from 'node:fs/promises'
import { resolve } from 'node:path'
import { MAX_TIMER_MS } from '../contract/argument-validators.js'
import type { Sandbox, SandboxProvider } from '../contract/index.js'
import { createSandboxProvider } from '../create-sandbox-provider.js'
import { RemoteCommandError } from '../host/index.js'
import { cliBubblewrap } from './cli-bubblewrap.js'
import { reportCliError } from './cli-report.js'
import { exitCodeOf } from './exit-code.js'
import { EXIT_CODES } from './parse-args.js'
import { readRunStdin } from './run-input.js'
import { runOnTerminal } from './run-terminal.js'

export interface SandboxOptionsFromCli {
	readonly allowNetwork: boolean
	readonly workspace?: string
	readonly isolation: 'bubblewrap' | 'none'
}

/** Exit code of a command cancelled with Ctrl-C, as a shell reports SIGINT. */
export const INTERRUPTED_EXIT_CODE = EXIT_CODES.interrupted
/** Exit code of a command that ran past `--timeout-ms`, as coreutils `timeout` reports it. */
export const TIMED_OUT_EXIT_CODE = EXIT_CODES.timedOut

/**
 * The create settings every CLI verb derives from its flags: egress from `--allow-network`, and
 * `--workspace` resolved and created (the sandbox uses it and never removes it).
 */
export async function cliCreateConfig(options: SandboxOptionsFromCli): Promise<{
	readonly egress: { readonly kind: 'allow-all' | 'deny-all' }
	readonly workingDirectory?: string
}> {
	const egress = { kind: options.allowNetwork ? 'allow-all' : 'deny-all' } as const
	if (options.workspace === undefined) return { egress }
	const workingDirectory = resolve(options.workspace)
	await mkdir(workingDirectory, { recursive: true })
	return { egress, workingDirectory }
}

export async function openCliSandbox(
	options: SandboxOptionsFromCli,
	signal: AbortSignal,
): Promise<{ provider: SandboxProvider; sandbox: Sandbox }> {
	const provider = createSandboxProvider({
		backend: { tier: 'process', isolation: options.isolation, ...cliBubblewrap() },
	})
	try {
		const sandbox = await provider.create({ signal, ...(await cliCreateConfig(options)) })
		return { provider, sandbox }
	} catch (error) {
		await provider.close()
		throw error
	}
}

interface RunOptions extends SandboxOptionsFromCli {
	readonly command: string
	readonly args: readonly string[]
	readonly timeoutMs?: number
	/** `--no-stdin`: the command's stdin is empty even when the CLI's is a pipe. */
	readonly noStdin?: boolean
}

/** A command whose reader closed the CLI's stdout, as a shell reports SIGPIPE (128 + 13). */
export const BROKEN_PIPE_EXIT_CODE = 141

/** Without `--timeout-ms` a command runs until it ends or Ctrl-C: the longest timer there is. */
export const UNBOUNDED_RUN_MS = MAX_TIMER_MS

/** How a guest's spawn failure maps to a shell's 127 (not found) and 126 (not executable). */
function spawnFailureCode(error: unknown): number | undefined {
	if (!(error instanceof RemoteCommandError)) return undefined
	if (/\bENOENT\b/.test(error.guestError)) return EXIT_CODES.commandNotFound
	if (/\b(EACCES|ENOEXEC|EISDIR|EPERM)\b/.test(error.guestError)) return EXIT_CODES.notExecutable
	return undefined
}

function spawnFailureLine(command: string, code: number): string {
	return code === EXIT_CODES.commandNotFound
		? `namzu-sandbox: ${command}: command not found in the sandbox (check the name and PATH; the sandbox sees the host's /usr read-only)`
		: `namzu-sandbox: ${command}: not executable in the sandbox (check its mode and interpreter line)`
}

/** Writes `data`; when the stream is full, a promise of its drain (or of the abort) for backpressure. */
function written(
	stream: NodeJS.WriteStream,
	data: string,
	signal: AbortSignal,
): Promise<void> | undefined {
	if (stream.write(data) || signal.aborted) return undefined
	return new Promise((resolve) => {
		const done = () => {
			stream.off('drain', done)
			signal.removeEventListener('abort', done)
			resolve()
		}
		stream.once('drain', done)
		signal.addEventListener('abort', done, { once: true })
	})
}

/** The command's stdin: none on a terminal (it is driven live) or with --no-stdin, else a pipe read to EOF. */
async function pipedStdin(options: RunOptions, signal: AbortSignal): Promise<string | undefined> {
	if (options.noStdin === true || process.stdin.isTTY === true) return undefined
	return readRunStdin(process.stdin, signal)
}

/**
 * `namzu-sandbox run`: the command's exit code, as a shell reports it (USAGE lists the CLI's own).
 * On a terminal the command gets a PTY (`run-terminal.ts`); otherwise its output streams to the
 * CLI's stdout/stderr untouched and unretained, and Ctrl-C aborts through the exec's AbortSignal,
 * so the process group inside the sandbox is really terminated before we exit.
 */
// long: one lifecycle — signals, stdin, sandbox creation (125), the run, and the exit codes it maps
export async function runCommand(
	options: RunOptions,
	context: { readonly debug: boolean } = { debug: false },
): Promise<number> {
	const controller = new AbortController()
	const onSignal = () => controller.abort(new Error('interrupted'))
	let stdoutClosed = false
	// The reader went away (`| head`): end the command as a shell's SIGPIPE would.
	const onStdoutError = () => {
		stdoutClosed = true
		controller.abort(new Error('stdout closed'))
	}
	const interrupted = () => (stdoutClosed ? BROKEN_PIPE_EXIT_CODE : INTERRUPTED_EXIT_CODE)
	process.on('SIGINT', onSignal)
	process.on('SIGTERM', onSignal)
	process.on('SIGHUP', onSignal)
	process.stdout.on('error', onStdoutError)
	let provider: SandboxProvider | undefined
	try {
		const terminal = process.stdin.isTTY === true && process.stdout.isTTY === true
		const stdin = terminal ? undefined : await pipedStdin(options, controller.signal)
		if (controller.signal.aborted) return interrupted()
		let sandbox: Sandbox
		try {
			;({ provider, sandbox } = await openCliSandbox(options, controller.signal))
		} catch (error) {
			if (controller.signal.aborted) return interrupted()
			return reportCliError(error, { ...context, exitCode: EXIT_CODES.sandboxUnavailable })
		}
		try {
			if (terminal) return await runOnTerminal(sandbox, options, controller.signal)
			const timeoutMs = options.timeoutMs ?? UNBOUNDED_RUN_MS
			const result = await sandbox.exec(options.command, options.args, {
				signal: controller.signal,
				timeout: timeoutMs,
				collectOutput: false,
				...(stdin === undefined ? {} : { stdin }),
				onOutput: ({ stream, data }) =>
					written(stream === 'stdout' ? process.stdout : process.stderr, data, controller.signal),
			})
			if (result.timedOut && !result.aborted) {
				process.stderr.write(`namzu-sandbox: timed out after ${timeoutMs} ms\n`)
			}
			return result.aborted ? interrupted() : exitCodeOf(result)
		} catch (error) {
			const code = spawnFailureCode(error)
			if (code === undefined) throw error
			process.stderr.write(`${spawnFailureLine(options.command, code)}\n`)
			return code
		}
	} catch (error) {
		if (controller.signal.aborted) return interrupted()
		throw error
	} finally {
		process.off('SIGINT', onSignal)
		process.off('SIGTERM', onSignal)
		process.off('SIGHUP', onSignal)
		process.stdout.off('error', onStdoutError)
		await provider?.close()
	}
}
