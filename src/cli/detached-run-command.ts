import { setTimeout as sleep } from 'node:timers/promises'
import type { LocalSandbox, LocalSandboxProvider } from '../backends/local/index.js'
import { ExecutionDetachedError } from '../contract-entry.js'
import { AgentSandbox } from '../host/index.js'
import { CliUsageError } from './cli-errors.js'
import { formatCliHandle } from './cli-handle.js'
import { reportCliError } from './cli-report.js'
import { recordExecution } from './execution-journal.js'
import { cliLocalProvider } from './kept-alive-context.js'
import { EXIT_CODES } from './parse-args.js'
import { cliCreateConfig, type SandboxOptionsFromCli } from './sandbox-config.js'

/** Bound on the guest reporting the command started. */
const START_CONFIRM_TIMEOUT_MS = 10_000
const START_POLL_MS = 10

export interface DetachedRunOptions extends SandboxOptionsFromCli {
	readonly command: string
	readonly args: readonly string[]
	readonly timeoutMs?: number
	readonly keepAliveMs?: number
}

/**
 * Resolves once the guest holds execution `executionId` in a state past `reserved` (the command
 * was handed to it). Asking `reserve-execution` about an id it already holds only reports the
 * state; it reserves nothing new.
 */
async function waitUntilStarted(sandbox: LocalSandbox, executionId: string): Promise<void> {
	if (!(sandbox instanceof AgentSandbox)) return
	const deadline = Date.now() + START_CONFIRM_TIMEOUT_MS
	while (Date.now() < deadline) {
		const reply = await sandbox.transport.reserveExecution(
			AbortSignal.timeout(START_CONFIRM_TIMEOUT_MS),
			executionId,
		)
		if (typeof reply.state === 'string' && reply.state !== 'reserved') return
		await sleep(START_POLL_MS)
	}
	throw new Error(`execution ${executionId} did not start within ${START_CONFIRM_TIMEOUT_MS} ms`)
}

/**
 * Starts `command` detached in `sandbox` and resolves with its execution id once the guest runs
 * it; the id is journaled for `sessions`.
 */
export async function startDetached(
	sandbox: LocalSandbox,
	run: {
		readonly command: string
		readonly args: readonly string[]
		readonly timeoutMs?: number
		readonly env?: Readonly<Record<string, string>>
		readonly cwd?: string
	},
): Promise<string> {
	const stopWatching = new AbortController()
	let announced: Promise<void> | undefined
	let executionId: string | undefined
	const running = sandbox.exec(run.command, run.args, {
		detach: true,
		detachSignal: stopWatching.signal,
		...(run.timeoutMs === undefined ? {} : { timeout: run.timeoutMs }),
		...(run.env === undefined ? {} : { env: run.env }),
		...(run.cwd === undefined ? {} : { cwd: run.cwd }),
		onExecutionId: (id) => {
			executionId = id
			announced = waitUntilStarted(sandbox, id).finally(() => stopWatching.abort())
		},
	})
	const outcome = await running.then(
		() => undefined,
		(error: unknown) => error,
	)
	await announced
	if (outcome !== undefined && !(outcome instanceof ExecutionDetachedError)) throw outcome
	if (executionId === undefined) throw new Error('the guest never named the execution')
	await recordExecution(sandbox, { executionId, command: run.command, args: run.args })
	return executionId
}

export async function detachedRunCommand(
	options: DetachedRunOptions,
	context: { readonly debug: boolean } = { debug: false },
): Promise<number> {
	let provider: LocalSandboxProvider | undefined
	let sandbox: LocalSandbox
	try {
		const config = await cliCreateConfig(options)
		provider = cliLocalProvider(options)
		sandbox = await provider.create({
			keepAlive: true,
			...(options.keepAliveMs === undefined ? {} : { keepAliveMs: options.keepAliveMs }),
			...config,
		})
	} catch (error) {
		await provider?.close()
		if (error instanceof CliUsageError) throw error
		return reportCliError(error, { ...context, exitCode: EXIT_CODES.sandboxUnavailable })
	}
	try {
		const executionId = await startDetached(sandbox, options)
		process.stdout.write(
			`${formatCliHandle({ kind: 'execution', sandboxId: sandbox.id, executionId })}\n`,
		)
		process.stderr.write(
			`namzu-sandbox: started in kept-alive sandbox ${sandbox.id}; follow it with: namzu-sandbox attach ${sandbox.id}/${executionId}\n`,
		)
		return 0
	} catch (error) {
		await sandbox.destroy().catch(() => undefined)
		throw error
	} finally {
		await provider?.close()
	}
}
