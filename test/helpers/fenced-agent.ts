// Fences a REAL guest agent into `agent_retiring` from a second, plain host handle: a command
// prints its pid, the test freezes it (frozen-process.ts), and aborting the exec sends a cancel
// the agent cannot confirm — it answers `cancellation_unconfirmed` and serves only `healthz` and
// `cancel-execution` from then on. The agent must run with a short
// `NAMZU_AGENT_CANCEL_CONFIRM_TIMEOUT_MS` (FENCE_AGENT_ENV).
import { expect } from 'vitest'
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
	const controller = new AbortController()
	let output = ''
	let frozen: FrozenProcess | undefined
	let freezing: Promise<void> | undefined
	const exec = fencer.exec('/bin/sh', ['-c', 'echo "$$"; exec sleep 600'], {
		signal: controller.signal,
		onOutput: (chunk) => {
			output += chunk.data
			const match = /^(\d+)\n/.exec(output)
			if (match && !freezing) {
				freezing = freezeProcess(Number(match[1])).then((handle) => {
					frozen = handle
					controller.abort()
				})
			}
		},
	})
	const error = await exec.then(
		() => undefined,
		(failure: unknown) => failure,
	)
	await freezing
	expect(error).toBeInstanceOf(RemoteCancellationUnknownError)
	if (!(error instanceof RemoteCancellationUnknownError) || !frozen) {
		throw new Error('the fence did not take')
	}
	const health = await transport.request('healthz', undefined)
	expect(health).toMatchObject({ ok: false, retiring: true })
	return { error, frozen }
}
