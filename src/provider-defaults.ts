import type { EgressPolicy } from './contract/egress.js'

/** Defaults every provider applies to `create()` calls that do not set their own. */
export interface SandboxProviderDefaults {
	/** Default `deny-all`. */
	readonly defaultEgress?: EgressPolicy
	readonly defaultTimeoutMs?: number
	readonly defaultMemoryLimitMb?: number
	readonly defaultMaxProcesses?: number
}
