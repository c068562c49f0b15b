/**
 * Shared bits of the retained-execution tests: caller-named ids, reserve/execute/attach over raw
 * frames on the real agent, and readers for the offset-carrying deltas. Test-only.
 */
import { randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { AgentAddress } from '../../helpers/raw-agent-client.js'
import { rawRequest } from '../../helpers/raw-agent-client.js'
import { type AgentStream, openAgentStream } from '../agent-stream.js'

export function newExecutionId(): string {
	return `exec_${randomUUID()}`
}

export async function reserve(
	agent: AgentAddress,
	executionId?: string,
): Promise<Record<string, unknown>> {
	const exchange = await rawRequest(agent, {
		op: 'reserve-execution',
		body: executionId === undefined ? {} : { executionId },
	})
	const reply = exchange.frames[0]
	if (!reply) throw new Error('reserve-execution: no reply')
	return reply
}

/** Starts a retained execute; the stream stays open until the test closes it or it ends. */
export function executeRetained(
	agent: AgentAddress,
	executionId: string,
	command: string,
	extra: Record<string, unknown> = {},
): AgentStream {
	return openAgentStream(agent, {
		op: 'execute',
		body: { executionId, command: 'sh', args: ['-c', command], retainOutput: true, ...extra },
	})
}

export function attach(agent: AgentAddress, executionId: string, fromOffset?: number): AgentStream {
	return openAgentStream(agent, {
		op: 'attach-execution',
		body: fromOffset === undefined ? { executionId } : { executionId, fromOffset },
	})
}

export function isDelta(event: Record<string, unknown>): boolean {
	return event.type === 'stdout_delta' || event.type === 'stderr_delta'
}

/** The text of every delta in `events`, in order. */
export function deltaText(events: readonly Record<string, unknown>[]): string {
	return events
		.filter(isDelta)
		.map((event) => String(event.data))
		.join('')
}

/** Waits until `file` exists in the workspace (the command's own progress marker). */
export async function waitForFile(workspace: string, file: string, timeoutMs = 10_000) {
	const deadline = Date.now() + timeoutMs
	while (!existsSync(join(workspace, file))) {
		if (Date.now() > deadline) throw new Error(`${file} never appeared`)
		await new Promise((resolve) => setTimeout(resolve, 20))
	}
}

/** A command that prints `one`, marks it, waits for `go`, prints `two` and exits 7. */
export const GATED_COMMAND =
	'echo one; touch printed-one; while [ ! -f go ]; do sleep 0.02; done; echo two; exit 7'
