/**
 * Process-wide admission gates. `retiring` is set after a
 * cancellation the guest could not confirm and is never cleared: a retiring agent serves only
 * `healthz` and `cancel-execution`. `quiescing` is raised while a quiesce (or the SIGTERM drain)
 * runs: new work is refused, request-shaped ops with `quiesce_in_progress`, stream-shaped ones as
 * a stream refusal. Pure decision; the connection layer applies it after authentication.
 */
import { AGENT_OP, type AgentOp } from '../../wire/protocol.js'
import { AGENT_REFUSAL } from '../../wire/refusals.js'

export interface AgentGates {
	retiring: boolean
	quiescing: boolean
}

export function createAgentGates(): AgentGates {
	return { retiring: false, quiescing: false }
}

const SERVED_WHILE_RETIRING: ReadonlySet<string> = new Set<AgentOp>([
	AGENT_OP.healthz,
	AGENT_OP.cancelExecution,
])
const REFUSED_WHILE_QUIESCING: ReadonlySet<string> = new Set<AgentOp>([
	AGENT_OP.reserveExecution,
	AGENT_OP.execute,
	AGENT_OP.terminal,
	AGENT_OP.startDetached,
	AGENT_OP.killSession,
	AGENT_OP.attachExecution,
	AGENT_OP.attachSession,
	AGENT_OP.quiesce,
	AGENT_OP.flush,
])

/** The refusal for `op` under the current gates, or undefined when it may run. */
export function gateRefusal(gates: AgentGates, op: string): string | undefined {
	if (gates.retiring && !SERVED_WHILE_RETIRING.has(op)) return AGENT_REFUSAL.agent_retiring
	if (gates.quiescing && REFUSED_WHILE_QUIESCING.has(op)) return AGENT_REFUSAL.quiesce_in_progress
	return undefined
}
