/**
 * Strict reading of a guest's `healthz` answer: `ok` must be `true` and `protocolVersion` exactly
 * the version this host speaks, otherwise the guest image is incompatible (or retiring) and must
 * not be used. `features` is optional for guests that predate it.
 */

import { AGENT_OP, type HealthzReply } from '../../wire/protocol.js'
import { AGENT_REFUSAL } from '../../wire/refusals.js'
import { AgentOpRefusedError, RemoteProtocolError } from '../refusals/refusal-errors.js'
import { REMOTE_EXECUTION_PROTOCOL_VERSION } from './agent-transport-options.js'

/** A `healthz` answer the host accepted: `ok` true (a retiring agent is refused). */
export interface AgentHealth extends Omit<HealthzReply, 'ok' | 'retiring'> {
	readonly ok: true
}

export function parseHealthzReply(reply: Record<string, unknown>): AgentHealth {
	if (reply.protocolVersion !== REMOTE_EXECUTION_PROTOCOL_VERSION) {
		throw new RemoteProtocolError(
			`guest agent speaks protocol ${JSON.stringify(reply.protocolVersion)}, this host speaks ${REMOTE_EXECUTION_PROTOCOL_VERSION}; rebuild the guest image from this release`,
		)
	}
	if (reply.ok !== true) {
		const retiring = reply.retiring === true
		// A fenced agent's answer keeps its code as the cause, so a tier can name the fence by type.
		throw new RemoteProtocolError(
			`guest agent healthz answered ok=${String(reply.ok)}${retiring ? ' (the agent is retiring)' : ''}`,
			retiring
				? { cause: new AgentOpRefusedError(AGENT_OP.healthz, AGENT_REFUSAL.agent_retiring) }
				: {},
		)
	}
	const features = reply.features ?? []
	if (!Array.isArray(features) || !features.every((entry) => typeof entry === 'string')) {
		throw new RemoteProtocolError('guest agent healthz features is not a list of strings')
	}
	return { ok: true, protocolVersion: reply.protocolVersion, features }
}
