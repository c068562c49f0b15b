/**
 * The session registry's settings, validated once at startup with the rest of the agent's
 * environment: a bad value refuses startup (`AgentConfigError`) naming the variable.
 */
import { integerVariable, POSITIVE_INTEGER } from '../handler/value-checks.js'

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

export function loadSessionConfig(
	env: Readonly<Record<string, string | undefined>> = process.env,
): SessionConfig {
	return {
		maxSessions: integerVariable(
			env,
			'NAMZU_AGENT_MAX_SESSIONS',
			DEFAULT_SESSION_CONFIG.maxSessions,
			POSITIVE_INTEGER,
		),
		logBytes: integerVariable(
			env,
			'NAMZU_AGENT_SESSION_LOG_BYTES',
			DEFAULT_SESSION_CONFIG.logBytes,
			POSITIVE_INTEGER,
		),
		terminalTtlMs: integerVariable(
			env,
			'NAMZU_AGENT_SESSION_TERMINAL_TTL_MS',
			DEFAULT_SESSION_CONFIG.terminalTtlMs,
			POSITIVE_INTEGER,
		),
		killConfirmTimeoutMs: integerVariable(
			env,
			'NAMZU_AGENT_SESSION_KILL_CONFIRM_TIMEOUT_MS',
			DEFAULT_SESSION_CONFIG.killConfirmTimeoutMs,
			POSITIVE_INTEGER,
		),
	}
}
