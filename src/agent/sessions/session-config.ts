/**
 * The session registry's settings, validated once at startup with the rest of
 * the agent's environment: a bad value refuses startup naming the variable.
 */

export interface SessionConfig {
	/** Sessions held at once, running and exited (`NAMZU_AGENT_MAX_SESSIONS`). */
	readonly maxSessions: number
	/** Output retained per session (`NAMZU_AGENT_SESSION_LOG_BYTES`). */
	readonly logBytes: number
	/** How long an exited session's record and output outlive it. */
	readonly terminalTtlMs: number
	/** How long `kill-session` waits for the program to exit before answering. */
	readonly killConfirmTimeoutMs: number
}

export const DEFAULT_SESSION_CONFIG: SessionConfig = {
	maxSessions: 16,
	logBytes: 1024 * 1024,
	terminalTtlMs: 10 * 60_000,
	killConfirmTimeoutMs: 5000,
}

export class SessionConfigError extends Error {
	override readonly name = 'SessionConfigError'
	readonly variable: string

	constructor(variable: string, raw: string) {
		super(`${variable} must be a positive safe integer, got ${JSON.stringify(raw)}`)
		this.variable = variable
	}
}

function positive(
	env: Readonly<Record<string, string | undefined>>,
	name: string,
	fallback: number,
): number {
	const raw = env[name]
	if (raw === undefined || raw === '') return fallback
	const value = Number(raw)
	if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(value) || value < 1) {
		throw new SessionConfigError(name, raw)
	}
	return value
}

export function loadSessionConfig(
	env: Readonly<Record<string, string | undefined>> = process.env,
): SessionConfig {
	return {
		maxSessions: positive(env, 'NAMZU_AGENT_MAX_SESSIONS', DEFAULT_SESSION_CONFIG.maxSessions),
		logBytes: positive(env, 'NAMZU_AGENT_SESSION_LOG_BYTES', DEFAULT_SESSION_CONFIG.logBytes),
		terminalTtlMs: positive(
			env,
			'NAMZU_AGENT_SESSION_TERMINAL_TTL_MS',
			DEFAULT_SESSION_CONFIG.terminalTtlMs,
		),
		killConfirmTimeoutMs: positive(
			env,
			'NAMZU_AGENT_SESSION_KILL_CONFIRM_TIMEOUT_MS',
			DEFAULT_SESSION_CONFIG.killConfirmTimeoutMs,
		),
	}
}
