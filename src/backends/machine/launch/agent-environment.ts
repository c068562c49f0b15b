/**
 * The environment the agent starts with. Exec'd children inherit it (minus the agent's own
 * `NAMZU_*` keys), so it carries a sane PATH/LANG and a writable HOME outside the workspace, then
 * the caller's `env` on top.
 */
import { dirname } from 'node:path'
import {
	WORKLOAD_CGROUPS_VARIABLE,
	type WorkloadCgroupFd,
	workloadCgroupsVariable,
} from '../cgroups/workload-cgroups.js'

export interface AgentEnvironmentInput {
	readonly workspace: string
	readonly homeDir: string
	/**
	 * The node binary the workload runs (readable, unlike the agent's own copy); its directory goes
	 * first on PATH so `node` resolves to it inside the sandbox.
	 */
	readonly nodePath: string
	readonly user: string
	readonly callerEnv: Readonly<Record<string, string>>
	/** Extra agent settings (`NAMZU_AGENT_*`) the provider wants, e.g. shorter test graces. */
	readonly agentSettings?: Readonly<Record<string, string>>
	/** The inherited `work/` cgroup descriptors (`workload-cgroups.ts`); none when absent. */
	readonly workloadCgroups?: readonly WorkloadCgroupFd[]
}

/** The agent's inherited-descriptor mode needs a port value; nothing dials it by port locally. */
export const INHERITED_LISTENER_PORT = '1024'
/** The listener, the first descriptor the agent inherits beyond stdio. */
export const INHERITED_LISTENER_FD = 3

/**
 * The descriptors the agent is meant to inherit beyond stdio — the listener, then the `work/`
 * cgroup directories — for `NAMZU_AGENT_INHERITED_FDS`; it closes every other one it inherited
 * (bwrap's own info and lifetime descriptors never reach it).
 */
export function inheritedAgentFds(workloadCgroups: readonly WorkloadCgroupFd[] = []): number[] {
	return [INHERITED_LISTENER_FD, ...workloadCgroups.map((entry) => entry.fd)]
}

/** The agent setting naming the shell spares wait in (`spare-command.ts` in the agent). */
export const SPARE_SHELL_VARIABLE = 'NAMZU_AGENT_SPARE_SHELL'

export const SANDBOX_SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

export function buildAgentEnvironment(input: AgentEnvironmentInput): Record<string, string> {
	const nodeDir = dirname(input.nodePath)
	const path = [nodeDir, ...SANDBOX_SYSTEM_PATH.split(':').filter((dir) => dir !== nodeDir)].join(
		':',
	)
	return {
		PATH: path,
		LANG: 'C.UTF-8',
		HOME: input.homeDir,
		USER: input.user,
		LOGNAME: input.user,
		XDG_CACHE_HOME: `${input.homeDir}/.cache`,
		XDG_CONFIG_HOME: `${input.homeDir}/.config`,
		TMPDIR: '/tmp',
		...input.callerEnv,
		...(input.agentSettings ?? {}),
		// The agent listens on the descriptor the host hands it as fd 3 (see agent-listen-socket.ts).
		NAMZU_AGENT_VSOCK_PORT: INHERITED_LISTENER_PORT,
		NAMZU_AGENT_INHERITED_FDS: inheritedAgentFds(input.workloadCgroups).join(','),
		NAMZU_SANDBOX_WORKSPACE: input.workspace,
		...(input.workloadCgroups === undefined || input.workloadCgroups.length === 0
			? {}
			: { [WORKLOAD_CGROUPS_VARIABLE]: workloadCgroupsVariable(input.workloadCgroups) }),
	}
}

/**
 * Agent tuning knobs passed through from the host's own environment (graces, TTLs, frame and
 * timeout ceilings), so operators and tests can adjust the agent without a new config field. The
 * listen mode and the bind token are never passed: the provider owns those.
 */
export const PASSED_THROUGH_AGENT_SETTINGS = [
	'NAMZU_AGENT_MAX_FRAME_BYTES',
	'NAMZU_AGENT_MAX_PREAUTH_FRAME_BYTES',
	'NAMZU_AGENT_REFUSAL_FLUSH_GRACE_MS',
	'NAMZU_AGENT_CANCEL_GRACE_MS',
	'NAMZU_AGENT_CANCEL_CONFIRM_TIMEOUT_MS',
	'NAMZU_AGENT_EXECUTION_LEASE_TTL_MS',
	'NAMZU_AGENT_EXECUTION_TERMINAL_TTL_MS',
	'NAMZU_AGENT_MAX_TRACKED_EXECUTIONS',
	'NAMZU_AGENT_READ_FILE_RANGE_BYTES',
	'NAMZU_AGENT_READ_FILE_STREAM_CHUNK_BYTES',
	// Per-command accounting (its counting groups and reads); '0' switches it off.
	'NAMZU_AGENT_EXEC_ACCOUNTING',
	// Commands started ahead in their groups; '0' switches them off (the bench's before/after).
	SPARE_SHELL_VARIABLE,
	'NAMZU_SANDBOX_MAX_TIMEOUT_MS',
	// Sessions, retained executions, quiesce/flush and the SIGTERM drain.
	'NAMZU_AGENT_MAX_SESSIONS',
	'NAMZU_AGENT_SESSION_LOG_BYTES',
	'NAMZU_AGENT_SESSION_TERMINAL_TTL_MS',
	'NAMZU_AGENT_SESSION_KILL_CONFIRM_TIMEOUT_MS',
	'NAMZU_AGENT_EXECUTION_LOG_BYTES',
	'NAMZU_AGENT_MAX_RETAINED_OUTPUT_LOGS',
	'NAMZU_AGENT_EXECUTION_RETAINED_TTL_MS',
	'NAMZU_AGENT_QUIESCE_GRACE_MS',
	'NAMZU_AGENT_QUIESCE_DEADLINE_MS',
	'NAMZU_AGENT_QUIESCE_MAX_ROUNDS',
	'NAMZU_AGENT_QUIESCE_SETTLE_MS',
	'NAMZU_AGENT_FLUSH_TIMEOUT_MS',
	'NAMZU_AGENT_SHUTDOWN_DEADLINE_MS',
] as const

export function agentSettingsFrom(
	hostEnv: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
	const settings: Record<string, string> = {}
	for (const key of PASSED_THROUGH_AGENT_SETTINGS) {
		const value = hostEnv[key]
		if (value !== undefined && value !== '') settings[key] = value
	}
	return settings
}
