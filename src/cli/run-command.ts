import { mkdir } from 'node:fs/promises'
import { resolve } from 'node:path'
import type { Sandbox, SandboxProvider } from '../contract/index.js'
import { createSandboxProvider } from '../create-sandbox-provider.js'
import { cliBubblewrap } from './cli-bubblewrap.js'
import { exitCodeOf } from './exit-code.js'
import { EXIT_CODES } from './parse-args.js'

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
		if (result.timedOut && !result.aborted) {
			process.stderr.write(`namzu-sandbox: timed out after ${options.timeoutMs} ms\n`)
		}
		if (result.stdoutTruncated || result.stderrTruncated) {
			process.stderr.write('namzu-sandbox: output was truncated\n')
		}
		return exitCodeOf(result)
	} catch (error) {
		if (controller.signal.aborted) return INTERRUPTED_EXIT_CODE
		throw error
	} finally {
		process.off('SIGINT', onSigint)
		process.off('SIGTERM', onSigint)
		await provider?.close()
	}
}
