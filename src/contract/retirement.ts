/**
 * What a backend did with a sandbox whose cancellation could not be confirmed: it retires (removes)
 * the whole unit, and records here whether the removal was accepted.
 */
export interface SandboxRetirementObservation {
	readonly accepted: boolean
	readonly error?: Error
	readonly reason?: string
}
