/**
 * The environment every process the agent starts is handed: the agent's own, minus every
 * `NAMZU_AGENT_*` and `NAMZU_SANDBOX_*` key (the bind token among them), then the caller's values.
 */

const AGENT_PREFIXES = ['NAMZU_AGENT_', 'NAMZU_SANDBOX_'] as const

export function scrubbedEnvironment(
	base: Readonly<Record<string, string | undefined>> = process.env,
): Record<string, string> {
	const env: Record<string, string> = {}
	for (const [key, value] of Object.entries(base)) {
		if (value === undefined) continue
		if (AGENT_PREFIXES.some((prefix) => key.startsWith(prefix))) continue
		env[key] = value
	}
	return env
}

/** Scrubbed base, then `overrides` (which win over everything, `TERM` included). */
export function childEnvironment(
	overrides: Readonly<Record<string, string>> | undefined,
	extra: Readonly<Record<string, string>> = {},
	base: Readonly<Record<string, string | undefined>> = process.env,
): Record<string, string> {
	return { ...scrubbedEnvironment(base), ...extra, ...(overrides ?? {}) }
}
