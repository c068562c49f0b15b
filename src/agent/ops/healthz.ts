/**
 * `healthz`: liveness, the protocol version and the advertised features — nothing else. It is
 * exempt from the token gate, never lifts it, and never echoes any part of the envelope.
 */
import { AGENT_PROTOCOL_VERSION } from '../../wire/features.js'
import type { HealthzReply } from '../../wire/protocol.js'
import { advertisedFeatures } from '../handler/agent-features.js'
import type { AgentConfig } from '../handler/config.js'
import type { OpHandler } from '../handler/op-context.js'

/** A retiring agent answers `ok: false` with `retiring: true`, so readiness fails closed. */
export function healthzReply(
	config: Pick<AgentConfig, 'binaryFrames' | 'executeReserves'>,
	retiring = false,
): HealthzReply {
	return {
		ok: !retiring,
		protocolVersion: AGENT_PROTOCOL_VERSION,
		features: advertisedFeatures(config),
		...(retiring ? { retiring: true } : {}),
	}
}

export const healthz: OpHandler = (_body, ctx) => {
	ctx.reply(healthzReply(ctx.config, ctx.gates.retiring))
}
