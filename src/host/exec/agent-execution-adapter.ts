/**
 * Binds `RemoteExecutionController` to a guest agent: reserve and cancel are request-shaped ops,
 * execute is the event stream, read strictly — deltas, then exactly one `result` (or an `error`),
 * then the terminator; anything after the terminal event is a protocol error.
 */

import { RemoteCommandError, RemoteProtocolError } from '../refusals/refusal-errors.js'
import type { AgentTransport } from '../transport/agent-transport.js'
import type { RemoteExecutionAdapter } from './remote-execution-controller.js'
import type { RemoteTerminalMetadata } from './remote-execution-messages.js'
import { parseExecEvent } from './remote-execution-reply.js'

export function agentExecutionAdapter(transport: AgentTransport): RemoteExecutionAdapter {
	return {
		label: `guest agent (${transport.handle.kind})`,
		reserve: (signal, onDialed) => transport.reserveExecution(signal, undefined, onDialed),
		reservesOnExecute: () => transport.executeReservesAgreed,
		cancel: (executionId, signal, onDialed, fence) =>
			transport.cancelExecution(executionId, signal, onDialed, fence),
		async execute(request, signal, onOutput, onDialed) {
			let result: RemoteTerminalMetadata | undefined
			for await (const raw of transport.execute(request, signal, onDialed)) {
				if (result) throw new RemoteProtocolError('execute: event after the result')
				const event = parseExecEvent(raw)
				if (event.type === 'error') throw new RemoteCommandError(event.error)
				if (event.type === 'result') {
					const { type: _type, ...metadata } = event
					result = metadata
				} else {
					// Not pulling the next event lets the frame queue fill: backpressure reaches the guest.
					const held = onOutput({
						stream: event.type === 'stdout_delta' ? 'stdout' : 'stderr',
						data: event.data,
					})
					if (held !== undefined) await held
				}
			}
			if (!result) throw new RemoteProtocolError('execute: stream ended without a result')
			return result
		},
	}
}
