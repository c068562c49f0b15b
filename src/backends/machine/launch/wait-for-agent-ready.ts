/**
 * Waits until a freshly launched agent answers `healthz`, racing that against the process dying,
 * the ready budget and the caller's abort. Only the abort rejects with something other than a
 * `LocalSandboxStartError` (its own reason).
 */
import { settleWithin } from '../../../common/bounded-promise.js'
import { LocalSandboxStartError } from '../machine-errors.js'
import type { LaunchedAgentProcess } from './agent-launcher.js'

export interface WaitForAgentReadyOptions {
	readonly sandboxId: string
	readonly agent: LaunchedAgentProcess
	/** One readiness check that itself retries until its signal fires (e.g. `transport.healthz`). */
	readonly ready: (signal: AbortSignal) => Promise<unknown>
	readonly timeoutMs: number
	readonly signal?: AbortSignal
}

export async function waitForAgentReady(options: WaitForAgentReadyOptions): Promise<void> {
	const { agent, sandboxId, signal } = options
	signal?.throwIfAborted()
	const stop = new AbortController()
	const startError = (detail: string, cause?: unknown) => {
		const exit = agent.exitStatus()
		return new LocalSandboxStartError(
			sandboxId,
			detail,
			{ stderrTail: agent.stderrTail(), exitCode: exit?.code, signal: exit?.signal },
			cause === undefined ? {} : { cause },
		)
	}
	let timer: NodeJS.Timeout | undefined
	let onAbort: (() => void) | undefined
	const outcomes: Promise<void>[] = [
		options.ready(stop.signal).then(
			() => undefined,
			async (error: unknown) => {
				// A dying agent can accept a connection and drop it before its exit is observed; give the
				// exit a moment so the report carries the exit code and stderr rather than ECONNRESET.
				await settleWithin(agent.exited, 200)
				throw startError('the agent did not answer healthz', error)
			},
		),
		agent.exited.then((exit) => {
			// Give the stderr pipe a moment to deliver bwrap's or node's last words.
			return new Promise<void>((_, reject) =>
				setTimeout(() => {
					const how = exit.error
						? `could not be started (${exit.error.message})`
						: `exited (code ${exit.code}, signal ${exit.signal}) before it was ready`
					reject(startError(`the agent process ${how}`, exit.error))
				}, 20),
			)
		}),
		new Promise<void>((_, reject) => {
			timer = setTimeout(
				() => reject(startError(`no healthz answer within ${options.timeoutMs} ms`)),
				options.timeoutMs,
			)
		}),
	]
	if (signal) {
		outcomes.push(
			new Promise<void>((_, reject) => {
				onAbort = () => reject(signal.reason)
				signal.addEventListener('abort', onAbort, { once: true })
			}),
		)
	}
	try {
		await Promise.race(outcomes)
	} finally {
		clearTimeout(timer)
		if (onAbort) signal?.removeEventListener('abort', onAbort)
		stop.abort()
		// The losers of the race settle later; nothing may surface as an unhandled rejection.
		for (const outcome of outcomes) outcome.catch(() => undefined)
	}
}
