import { mkdir } from 'node:fs/promises'
import { resolve } from 'node:path'
import type { Sandbox, SandboxProvider } from '../contract/index.js'
import { createSandboxProvider } from '../create-sandbox-provider.js'

export interface SandboxOptionsFromCli {
	readonly allowNetwork: boolean
	readonly workspace?: string
	readonly isolation: 'bubblewrap' | 'none'
}

/** Exit code of a command cancelled with Ctrl-C, as a shell reports SIGINT. */
export const INTERRUPTED_EXIT_CODE = 130
/** Exit code of a command that ran past `--timeout-ms`, as coreutils `timeout` reports it. */
export const TIMED_OUT_EXIT_CODE = 124

export async function openCliSandbox(
	options: SandboxOptionsFromCli,
	signal: AbortSignal,
): Promise<{ provider: SandboxProvider; sandbox: Sandbox }> {
	const provider = createSandboxProvider({
		backend: { tier: 'process', isolation: options.isolation },
	})
	try {
		let workingDirectory: string | undefined
		if (options.workspace !== undefined) {
			workingDirectory = resolve(options.workspace)
			await mkdir(workingDirectory, { recursive: true })
		}
		const sandbox = await provider.create({
			signal,
			egress: { kind: options.allowNetwork ? 'allow-all' : 'deny-all' },
			...(workingDirectory === undefined ? {} : { workingDirectory }),
		})
		return { provider, sandbox }
	} catch (error) {
		await provider.close()
		throw error
	}
}

/**
 * `namzu-sandbox run`: stream the command's output, exit with its code. Ctrl-C aborts through the
 * exec's AbortSignal, so the process group inside the sandbox is really terminated before we exit.
 */
export async function runCommand(
	options: SandboxOptionsFromCli & {
		readonly command: string
		readonly args: readonly string[]
		readonly timeoutMs?: number
	},
): Promise<number> {
	const controller = new AbortController()
	const onSigint = () => controller.abort(new Error('interrupted'))
	process.on('SIGINT', onSigint)
	process.on('SIGTERM', onSigint)
	let provider: SandboxProvider | undefined
	try {
		const opened = await openCliSandbox(options, controller.signal)
		provider = opened.provider
		const result = await opened.sandbox.exec(options.command, options.args, {
			signal: controller.signal,
			...(options.timeoutMs === undefined ? {} : { timeout: options.timeoutMs }),
			onOutput: ({ stream, data }) => {
				;(stream === 'stdout' ? process.stdout : process.stderr).write(data)
			},
		})
		if (result.aborted) return INTERRUPTED_EXIT_CODE
		if (result.timedOut) {
			process.stderr.write(`namzu-sandbox: timed out after ${options.timeoutMs} ms\n`)
			return TIMED_OUT_EXIT_CODE
		}
		if (result.stdoutTruncated || result.stderrTruncated) {
			process.stderr.write('namzu-sandbox: output was truncated\n')
		}
		if (result.exitCode < 0) return result.signal ? 128 + signalNumber(result.signal) : 1
		return result.exitCode
	} catch (error) {
		if (controller.signal.aborted) return INTERRUPTED_EXIT_CODE
		throw error
	} finally {
		process.off('SIGINT', onSigint)
		process.off('SIGTERM', onSigint)
		await provider?.close()
	}
}

const SIGNAL_NUMBERS: Readonly<Record<string, number>> = {
	SIGHUP: 1,
	SIGINT: 2,
	SIGQUIT: 3,
	SIGKILL: 9,
	SIGSEGV: 11,
	SIGPIPE: 13,
	SIGTERM: 15,
}

function signalNumber(name: string): number {
	return SIGNAL_NUMBERS[name] ?? 0
}
