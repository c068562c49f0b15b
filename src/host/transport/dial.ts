/**
 * Establishes one connection to a guest agent, retrying inside a budget: the agent of a sandbox
 * that is still booting (or resuming) is simply not listening yet. Each attempt is bounded by
 * `connectTimeoutMs`; attempts are `connectRetryIntervalMs` apart and only start inside
 * `connectRetryBudgetMs`; `permanentDialFailure` stops the loop early. Gives up with `AgentDialFailedError` (cause = the last error) only when no
 * socket was ever established; an abort rejects with the signal's reason at any point.
 */

import type { Socket } from 'node:net'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import type { SandboxAgentHandle } from './agent-handle.js'
import {
	type AgentDialAttemptEvent,
	type AgentDialEvent,
	TCP_KEEPALIVE_MS,
} from './agent-transport-options.js'
import { connectWithSharedReads } from './socket-reads.js'
import { AgentDialFailedError, ConnectTimeoutError } from './transport-errors.js'
import { performVsockHandshake } from './vsock-handshake.js'

export interface DialOptions {
	readonly connectTimeoutMs: number
	readonly connectRetryBudgetMs: number
	readonly connectRetryIntervalMs: number
	readonly permanentDialFailure: (error: Error) => boolean
	readonly onDial?: (event: AgentDialEvent) => void
	readonly onDialAttempt?: (event: AgentDialAttemptEvent) => void
}

function abortReason(signal: AbortSignal): Error {
	const reason: unknown = signal.reason
	return reason instanceof Error ? reason : new DOMException('aborted', 'AbortError')
}

function openSocket(handle: SandboxAgentHandle): Socket {
	switch (handle.kind) {
		case 'unix':
			return connectWithSharedReads({ path: handle.path })
		case 'vsock':
			return connectWithSharedReads({ path: handle.udsPath })
		case 'tcp':
			return connectWithSharedReads({ host: handle.host, port: handle.port })
	}
}

/** One attempt: connect (plus the vsock preamble), bounded by `timeoutMs` and `signal`. */
export function connectOnce(
	handle: SandboxAgentHandle,
	timeoutMs: number,
	signal?: AbortSignal,
): Promise<Socket> {
	return new Promise((resolve, reject) => {
		if (signal?.aborted) {
			reject(abortReason(signal))
			return
		}
		const socket = openSocket(handle)
		let settled = false
		const finish = (error?: Error) => {
			if (settled) return
			settled = true
			clearTimeout(timer)
			signal?.removeEventListener('abort', onAbort)
			socket.off('error', onError)
			if (error) {
				socket.destroy()
				reject(error)
			} else {
				resolve(socket)
			}
		}
		const onAbort = () => finish(signal ? abortReason(signal) : new Error('aborted'))
		const onError = (error: Error) => finish(error)
		const timer = setTimeout(() => finish(new ConnectTimeoutError(timeoutMs)), timeoutMs)
		signal?.addEventListener('abort', onAbort, { once: true })
		socket.on('error', onError)
		socket.once('connect', () => {
			if (handle.kind === 'tcp') {
				socket.setKeepAlive(true, TCP_KEEPALIVE_MS)
				socket.setNoDelay(true)
			}
			if (handle.kind !== 'vsock') {
				finish()
				return
			}
			performVsockHandshake(socket, handle.port).then(
				() => finish(),
				(error: Error) => finish(error),
			)
		})
	})
}

/** Dials with retries; see the module comment for the rules. */
export async function dialAgent(
	handle: SandboxAgentHandle,
	options: DialOptions,
	signal?: AbortSignal,
): Promise<Socket> {
	const started = performance.now()
	let attempts = 0
	for (;;) {
		attempts++
		// Attempts only START inside the budget; each gets its full connect bound, so the worst case
		// is the budget plus one connectTimeoutMs, and no attempt is starved into a false timeout.
		try {
			options.onDialAttempt?.({ handleKind: handle.kind, attempt: attempts })
			const socket = await connectOnce(handle, options.connectTimeoutMs, signal)
			options.onDial?.({
				handleKind: handle.kind,
				attempts,
				durationMs: performance.now() - started,
			})
			return socket
		} catch (caught) {
			if (signal?.aborted) throw abortReason(signal)
			const error = caught instanceof Error ? caught : new Error(String(caught))
			const spent = performance.now() - started
			if (options.permanentDialFailure(error)) {
				throw new AgentDialFailedError(handle.kind, attempts, spent, {
					cause: error,
					permanent: true,
				})
			}
			if (spent + options.connectRetryIntervalMs >= options.connectRetryBudgetMs) {
				throw new AgentDialFailedError(handle.kind, attempts, spent, { cause: error })
			}
			// An abort rejects with the caller's reason, as an abort during the connect does.
			await sleep(options.connectRetryIntervalMs, undefined, { signal }).catch((error) => {
				throw signal?.aborted ? abortReason(signal) : error
			})
		}
	}
}
