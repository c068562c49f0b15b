/**
 * What a background command's handle sends it after it started (wire/execution-input.ts): bytes
 * for its stdin (in pieces of at most `MAX_EXECUTION_INPUT_BYTES`, each answered once the guest's
 * pipe took it), the end of its stdin, and one named signal for its process group. Refused by name
 * before dialing a guest without `execution-input`; a guest's refusal is `ProcessInputRefusedError`.
 */
import { type ExecutionSignal, MAX_EXECUTION_INPUT_BYTES } from '../../wire/execution-input.js'
import { EXECUTION_INPUT_FEATURE } from '../../wire/features.js'
import { AGENT_OP, type AgentOp } from '../../wire/protocol.js'
import { AgentOpRefusedError, AgentUnauthorizedError } from '../refusals/refusal-errors.js'
import { refusalToError } from '../refusals/refusal-to-error.js'
import type { AgentTransport } from '../transport/agent-transport.js'
import { requireGuestFeature } from '../transport/guest-features.js'

/** What one `write` / `closeStdin` sends: the bytes, whether stdin ends after them, the method. */
export interface ProcessInput {
	readonly bytes: Uint8Array
	readonly end: boolean
	readonly operation: string
}

async function processCall(
	transport: AgentTransport,
	operation: string,
	op: AgentOp,
	body: { readonly executionId: string } & Record<string, unknown>,
	signal: AbortSignal | undefined,
): Promise<Record<string, unknown>> {
	try {
		await requireGuestFeature(transport, EXECUTION_INPUT_FEATURE, operation, signal)
		return await transport.call(op, body, signal ? { signal } : {})
	} catch (error) {
		if (error instanceof AgentOpRefusedError && !(error instanceof AgentUnauthorizedError)) {
			throw refusalToError('process', error.refusal, {
				op,
				operation,
				executionId: body.executionId,
			})
		}
		throw error
	}
}

/** Writes `bytes` to the command's stdin (then closes it when `end`), a piece at a time. */
export async function writeProcessInput(
	transport: AgentTransport,
	executionId: string,
	input: ProcessInput,
	signal?: AbortSignal,
): Promise<void> {
	const { bytes, end, operation } = input
	let offset = 0
	do {
		const piece = bytes.subarray(offset, offset + MAX_EXECUTION_INPUT_BYTES)
		offset += piece.length
		const last = offset >= bytes.length
		await processCall(
			transport,
			operation,
			AGENT_OP.executionInput,
			{
				executionId,
				...(piece.length > 0 ? { data: Buffer.from(piece).toString('base64') } : {}),
				...(last && end ? { end: true } : {}),
			},
			signal,
		)
	} while (offset < bytes.length)
}

/** Sends `name` to the command's process group; false when it had already ended. */
export async function signalProcess(
	transport: AgentTransport,
	executionId: string,
	name: ExecutionSignal,
	signal?: AbortSignal,
): Promise<boolean> {
	const reply = await processCall(
		transport,
		'kill',
		AGENT_OP.signalExecution,
		{ executionId, signal: name },
		signal,
	)
	return reply.delivered === true
}
