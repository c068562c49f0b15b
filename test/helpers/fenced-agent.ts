// Fences a REAL guest agent into `agent_retiring` from a second, plain host handle: a command
// prints its pid, the test freezes it (frozen-process.ts), and aborting the exec sends a cancel
// the agent cannot confirm — it answers `cancellation_unconfirmed` and serves only `healthz` and
// `cancel-execution` from then on. The agent must run with a short
// `NAMZU_AGENT_CANCEL_CONFIRM_TIMEOUT_MS` (FENCE_AGENT_ENV).
import { expect } from 'vitest'
import type { SandboxOutputChunk } from '../../src/contract/sandbox.js'
import { RemoteCancellationUnknownError } from '../../src/host/refusals/refusal-errors.js'
import { createAgentSandbox } from '../../src/host/sandbox/agent-sandbox.js'
import type { SandboxAgentHandle } from '../../src/host/transport/agent-handle.js'
import { AgentTransport } from '../../src/host/transport/agent-transport.js'
import { type FrozenProcess, freezeProcess } from './frozen-process.js'

/** Agent variables that make an unconfirmable cancel answer within half a second. */
export const FENCE_AGENT_ENV: Readonly<Record<string, string>> = {
	NAMZU_AGENT_CANCEL_GRACE_MS: '50',
	NAMZU_AGENT_CANCEL_CONFIRM_TIMEOUT_MS: '400',
}

export interface FencedGuest {
	/** The unconfirmed cancellation the fencing handle met. */
	readonly error: RemoteCancellationUnknownError
	/** Thaws the frozen command so it dies; the agent stays fenced. */
	readonly frozen: FrozenProcess
}

/** What can run the command: any sandbox's `exec`. */
export interface ExecTarget {
	exec(
		command: string,
		args: readonly string[],
		options: { signal: AbortSignal; onOutput: (chunk: SandboxOutputChunk) => void },
	): Promise<unknown>
}

/**
 * Runs a command on `target`, freezes it once it printed its pid and aborts the exec: the cancel
 * goes unconfirmed. Resolves with what the exec rejected with (undefined if it resolved) and the
 * frozen command, which the caller thaws.
 */
export async function execUntilUnconfirmed(
	target: ExecTarget,
): Promise<{ readonly error: unknown; readonly frozen: FrozenProcess | undefined }> {
	const controller = new AbortController()
	let output = ''
	let freezing: Promise<FrozenProcess> | undefined
	const error = await target
		.exec('/bin/sh', ['-c', 'echo "$$"; exec sleep 600'], {
			signal: controller.signal,
			onOutput: (chunk) => {
				output += chunk.data
				const pid = /^(\d+)\n/.exec(output)?.[1]
				if (pid !== undefined && !freezing) {
					freezing = freezeProcess(Number(pid))
					void freezing.then(() => controller.abort())
				}
			},
		})
		.then(
			() => undefined,
			(failure: unknown) => failure,
		)
	return { error, frozen: await freezing }
}

/** Fences the agent behind `handle` and resolves once it is retiring. */
export async function fenceGuest(
	handle: SandboxAgentHandle,
	rootDir: string,
): Promise<FencedGuest> {
	const transport = new AgentTransport(handle)
	const fencer = createAgentSandbox({
		id: 'fencer',
		transport,
		rootDir,
		environment: 'linux-namespace',
		release: async () => {},
		// The guest answers `cancellation_unconfirmed` within 0.5 s; no need for the 8 s window.
		execution: { cancelConfirmTimeoutMs: 1_500 },
	})
	const { error, frozen } = await execUntilUnconfirmed(fencer)
	expect(error).toBeInstanceOf(RemoteCancellationUnknownError)
	if (!(error instanceof RemoteCancellationUnknownError) || !frozen) {
		throw new Error('the fence did not take')
	}
	const health = await transport.request('healthz', undefined)
	expect(health).toMatchObject({ ok: false, retiring: true })
	return { error, frozen }
}
