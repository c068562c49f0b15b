import { LocalSandboxNotFoundError } from '../backends/local/index.js'
import { MAX_TIMER_MS } from '../contract/argument-validators.js'
import type { Sandbox } from '../contract/index.js'
import { RemoteCommandError } from '../host/index.js'
import { CliUsageError } from './cli-errors.js'
import { reportCliError } from './cli-report.js'
import { exitCodeOf } from './exit-code.js'
import { EXIT_CODES } from './parse-args.js'
import { readRunStdin } from './run-input.js'
import { runOnTerminal } from './run-terminal.js'
import { openCliSandbox, type SandboxOptionsFromCli } from './sandbox-config.js'

/** Exit code of a command cancelled with Ctrl-C, as a shell reports SIGINT. */
export const INTERRUPTED_EXIT_CODE = EXIT_CODES.interrupted

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

/** Where a run happens: a fresh sandbox (`run`) or a kept-alive one (`exec`), and its release. */
export interface RunTarget {
	readonly sandbox: Sandbox
	release(): Promise<void>
}

interface RunOptions {
	readonly command: string
	readonly args: readonly string[]
	readonly timeoutMs?: number
	/** `--no-stdin`: the command's stdin is empty even when the CLI's is a pipe. */
	readonly noStdin?: boolean
	/** `exec -t`: a PTY when the CLI is on a terminal; `run` decides by itself (undefined). */
	readonly tty?: boolean
	readonly env?: Readonly<Record<string, string>>
	readonly cwd?: string
}

/** The command's stdin: none with --no-stdin or on a PTY (driven live), else a pipe read to EOF. */
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
export function runCommand(
	options: RunOptions & SandboxOptionsFromCli,
	context: { readonly debug: boolean } = { debug: false },
): Promise<number> {
	return runIn(
		async (signal) => {
			const { provider, sandbox } = await openCliSandbox(options, signal)
			return { sandbox, release: () => provider.close() }
		},
		options,
		context,
	)
}

// long: one lifecycle — signals, stdin, the target (125), the run, and the exit codes it maps
export async function runIn(
	open: (signal: AbortSignal) => Promise<RunTarget>,
	options: RunOptions,
	context: { readonly debug: boolean },
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
	let target: RunTarget | undefined
	try {
		const onTerminal = process.stdin.isTTY === true && process.stdout.isTTY === true
		const terminal = onTerminal && options.tty !== false
		const stdin = terminal ? undefined : await pipedStdin(options, controller.signal)
		if (controller.signal.aborted) return interrupted()
		try {
			target = await open(controller.signal)
		} catch (error) {
			if (controller.signal.aborted) return interrupted()
			// Bad flags and a missing kept-alive sandbox have their own codes (2, 3), not 125.
			if (error instanceof CliUsageError || error instanceof LocalSandboxNotFoundError) throw error
			return reportCliError(error, { ...context, exitCode: EXIT_CODES.sandboxUnavailable })
		}
		const { sandbox } = target
		try {
			if (terminal) return await runOnTerminal(sandbox, options, controller.signal)
			const timeoutMs = options.timeoutMs ?? UNBOUNDED_RUN_MS
			const result = await sandbox.exec(options.command, options.args, {
				signal: controller.signal,
				timeout: timeoutMs,
				collectOutput: false,
				...(stdin === undefined ? {} : { stdin }),
				...(options.env === undefined ? {} : { env: options.env }),
				...(options.cwd === undefined ? {} : { cwd: options.cwd }),
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
		await target?.release()
	}
}
