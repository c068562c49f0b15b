/**
 * A `NAMZU_AGENT_*` / `NAMZU_SANDBOX_*` value the agent refuses to start with. Its own module so
 * config.ts and the settings it gathers (lifecycle-config.ts, session-config.ts, through
 * value-checks.ts) throw the same class without importing config.ts back.
 */
export class AgentConfigError extends Error {
	override readonly name = 'AgentConfigError'
	/** The variable refused, when one is to blame. */
	readonly variable?: string

	constructor(message: string, variable?: string) {
		super(message)
		if (variable !== undefined) this.variable = variable
	}
}
