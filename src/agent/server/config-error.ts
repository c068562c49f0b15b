/**
 * A `NAMZU_AGENT_*` / `NAMZU_SANDBOX_*` value the agent refuses to start with. Its own module so
 * config.ts and the lifecycle settings it gathers (lifecycle-config.ts) throw the same class without
 * lifecycle-config.ts importing config.ts back.
 */
export class AgentConfigError extends Error {
	override readonly name = 'AgentConfigError'
}
