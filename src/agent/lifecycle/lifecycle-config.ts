/**
 * The agent settings of quiesce, flush and the SIGTERM drain, validated once
 * at startup like every other `NAMZU_AGENT_*` variable: a bad value refuses startup naming it.
 * Kept apart from config.ts so the lifecycle work owns its own variables; config.ts carries the
 * result as `config.lifecycle`.
 */
import { AgentConfigError } from '../handler/config-error.js'
import { integerVariable, POSITIVE_INTEGER } from '../handler/value-checks.js'

export type QuiesceScopeSetting = 'auto' | 'owned-sessions'

export interface LifecycleConfig {
	/** Default SIGTERM → SIGKILL wait per quiesce round (`NAMZU_AGENT_QUIESCE_GRACE_MS`). */
	readonly quiesceGraceMs: number
	/** Bound on one whole quiesce (`NAMZU_AGENT_QUIESCE_DEADLINE_MS`). */
	readonly quiesceDeadlineMs: number
	/** Scan passes before a quiesce that still finds processes gives up (`…_MAX_ROUNDS`). */
	readonly quiesceMaxRounds: number
	/** How long SIGKILLed processes may take to disappear (`NAMZU_AGENT_QUIESCE_SETTLE_MS`). */
	readonly quiesceSettleMs: number
	/** `owned-sessions` forces the narrow scan; `auto` decides by pid 1 / parent. */
	readonly quiesceScope: QuiesceScopeSetting
	/** Default bound on one flush (`NAMZU_AGENT_FLUSH_TIMEOUT_MS`). */
	readonly flushTimeoutMs: number
	/** Test override of `sync -f <workspace>`, run via `/bin/sh -c` (`NAMZU_AGENT_FLUSH_COMMAND`). */
	readonly flushCommand?: string
	/** Bound on the whole SIGTERM drain (`NAMZU_AGENT_SHUTDOWN_DEADLINE_MS`). */
	readonly shutdownDeadlineMs: number
}

type Env = Readonly<Record<string, string | undefined>>

export const DEFAULT_LIFECYCLE_CONFIG = {
	quiesceGraceMs: 1000,
	quiesceDeadlineMs: 20_000,
	quiesceMaxRounds: 8,
	quiesceSettleMs: 1000,
	flushTimeoutMs: 10_000,
	shutdownDeadlineMs: 15_000,
} as const

function scopeSetting(env: Env): QuiesceScopeSetting {
	const raw = env.NAMZU_AGENT_QUIESCE_SCOPE
	if (raw === undefined || raw === '') return 'auto'
	if (raw === 'owned-sessions') return raw
	throw new AgentConfigError(
		`NAMZU_AGENT_QUIESCE_SCOPE accepts only 'owned-sessions', got ${JSON.stringify(raw)}`,
	)
}

export function loadLifecycleConfig(env: Env = process.env): LifecycleConfig {
	const d = DEFAULT_LIFECYCLE_CONFIG
	const flushCommand = env.NAMZU_AGENT_FLUSH_COMMAND
	return {
		quiesceGraceMs: integerVariable(
			env,
			'NAMZU_AGENT_QUIESCE_GRACE_MS',
			d.quiesceGraceMs,
			POSITIVE_INTEGER,
		),
		quiesceDeadlineMs: integerVariable(
			env,
			'NAMZU_AGENT_QUIESCE_DEADLINE_MS',
			d.quiesceDeadlineMs,
			POSITIVE_INTEGER,
		),
		quiesceMaxRounds: integerVariable(
			env,
			'NAMZU_AGENT_QUIESCE_MAX_ROUNDS',
			d.quiesceMaxRounds,
			POSITIVE_INTEGER,
		),
		quiesceSettleMs: integerVariable(
			env,
			'NAMZU_AGENT_QUIESCE_SETTLE_MS',
			d.quiesceSettleMs,
			POSITIVE_INTEGER,
		),
		quiesceScope: scopeSetting(env),
		flushTimeoutMs: integerVariable(
			env,
			'NAMZU_AGENT_FLUSH_TIMEOUT_MS',
			d.flushTimeoutMs,
			POSITIVE_INTEGER,
		),
		...(flushCommand === undefined || flushCommand === '' ? {} : { flushCommand }),
		shutdownDeadlineMs: integerVariable(
			env,
			'NAMZU_AGENT_SHUTDOWN_DEADLINE_MS',
			d.shutdownDeadlineMs,
			POSITIVE_INTEGER,
		),
	}
}
