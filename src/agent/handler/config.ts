/**
 * Every setting the guest agent reads from its environment, validated once at startup. A bad value
 * refuses startup with a message naming the variable rather than running with a guess.
 */

import { FRAME_HEADER_BYTES } from '../../wire/frame.js'
import { DEFAULT_EXECUTION_TIMEOUT_MS, DEFAULT_MAX_OUTPUT_BYTES } from '../../wire/protocol.js'
import { type LifecycleConfig, loadLifecycleConfig } from '../lifecycle/lifecycle-config.js'
import {
	parseWorkloadCgroups,
	WORKLOAD_CGROUPS_VARIABLE,
	type WorkloadCgroupDescriptor,
} from '../process/workload-cgroup-config.js'
import { loadSessionConfig, type SessionConfig } from '../sessions/session-config.js'
import { AgentConfigError } from './config-error.js'
import { integerVariable, NON_NEGATIVE_INTEGER, POSITIVE_INTEGER } from './value-checks.js'

export const MiB = 1024 * 1024

export type ListenMode =
	| { readonly kind: 'unix'; readonly path: string }
	| { readonly kind: 'vsock'; readonly port: number; readonly fd: number }
	| { readonly kind: 'tcp'; readonly port: number }

export interface AgentConfig {
	readonly listen: ListenMode
	/** Exact token every op but `healthz` must present (`NAMZU_AGENT_BIND_TOKEN`). */
	readonly bindToken?: string
	/** Trust-on-first-use token mode (`NAMZU_AGENT_REQUIRE_TOKEN`). */
	readonly requireToken: boolean
	readonly maxFrameBytes: number
	readonly maxPreauthFrameBytes: number
	/** Token modes only: concurrent unauthenticated connections (`NAMZU_AGENT_MAX_PREAUTH_CONNECTIONS`). */
	readonly maxPreauthConnections: number
	/** Token modes only: bytes all unauthenticated connections may buffer together; ≥ one pre-auth frame. */
	readonly maxPreauthBufferBytes: number
	/** Token modes only: quiet time allowed before authenticating; every byte restarts it. */
	readonly preauthIdleTimeoutMs: number
	/** Token modes only: total time allowed before authenticating, from accept; nothing restarts it. */
	readonly preauthDeadlineMs: number
	readonly refusalFlushGraceMs: number
	readonly cancelGraceMs: number
	readonly cancelConfirmTimeoutMs: number
	readonly executionLeaseTtlMs: number
	readonly executionTerminalTtlMs: number
	readonly maxTrackedExecutions: number
	/** Retained output kept per execution that asked for it (`NAMZU_AGENT_EXECUTION_LOG_BYTES`). */
	readonly executionLogBytes: number
	/** Executions retaining output at once (`NAMZU_AGENT_MAX_RETAINED_OUTPUT_LOGS`). */
	readonly maxRetainedOutputLogs: number
	/** How long a retained execution's record and output outlive its end. */
	readonly executionRetainedTtlMs: number
	readonly readFileRangeBytes: number
	/**
	 * Bytes per frame of a streamed read. 1 MiB: against 256 KiB a 64 MiB `readFile` took 0.82× the
	 * time and a 1 GiB stream 0.72× (fewer hand-offs between the two ends), for about 1.5 MiB more
	 * held while a stream runs (BENCHMARKS.md).
	 */
	readonly readFileStreamChunkBytes: number
	/** `NAMZU_SANDBOX_WORKSPACE`, absolute. */
	readonly workspace: string
	/** Extra absolute roots readable (not writable) besides the workspace. */
	readonly readRoots: readonly string[]
	/** Extra absolute roots writable besides the workspace. */
	readonly writeRoots: readonly string[]
	/** Largest `timeoutMs` an `execute` may ask for (`NAMZU_SANDBOX_MAX_TIMEOUT_MS`). */
	readonly maxTimeoutMs: number
	readonly defaultTimeoutMs: number
	readonly defaultMaxOutputBytes: number
	/** Quiesce, flush and SIGTERM-drain settings (lifecycle-config.ts). */
	readonly lifecycle: LifecycleConfig
	/** Session registry limits (session-config.ts). */
	readonly sessions: SessionConfig
	/** Inherited cgroup directories every command joins (`NAMZU_AGENT_WORKLOAD_CGROUPS`). */
	readonly workloadCgroups: readonly WorkloadCgroupDescriptor[]
	/** Per-command counting groups and result accounting; `NAMZU_AGENT_EXEC_ACCOUNTING=0` off. */
	readonly execAccounting: boolean
	/**
	 * A shell the workload cannot read (`NAMZU_AGENT_SPARE_SHELL`, absolute): with per-command
	 * groups, the next command waits in its groups through it (`spare-command.ts`). Absent or
	 * `0`: none.
	 */
	readonly spareShell: string | undefined
	/** Binary data frames advertised and honoured; `NAMZU_AGENT_BINARY_FRAMES=0` switches them off. */
	readonly binaryFrames: boolean
	/**
	 * `execute` reserves and `cancel-execution` fences unseen ids (`EXECUTE_RESERVES_FEATURE`);
	 * `NAMZU_AGENT_EXECUTE_RESERVES=0` switches that off (the agent then ignores `reserve` / `fence`).
	 */
	readonly executeReserves: boolean
}

type Env = Readonly<Record<string, string | undefined>>

function integer(
	env: Env,
	name: string,
	fallback: number,
	options: { allowZero?: boolean } = {},
): number {
	return integerVariable(
		env,
		name,
		fallback,
		options.allowZero ? NON_NEGATIVE_INTEGER : POSITIVE_INTEGER,
	)
}

function roots(env: Env, name: string): string[] {
	const raw = env[name]
	if (raw === undefined || raw === '') return []
	const list = raw.split(':').filter((entry) => entry !== '')
	for (const entry of list) {
		if (!entry.startsWith('/'))
			throw new AgentConfigError(`${name} entries must be absolute: ${entry}`)
	}
	return list
}

function spareShell(raw: string | undefined): string | undefined {
	if (raw === undefined || raw === '' || raw === '0') return undefined
	if (!raw.startsWith('/')) {
		throw new AgentConfigError(`NAMZU_AGENT_SPARE_SHELL must be absolute: ${raw}`)
	}
	return raw
}

function listenMode(env: Env): ListenMode {
	const unixPath = env.NAMZU_AGENT_UNIX_PATH
	if (unixPath !== undefined && unixPath !== '') return { kind: 'unix', path: unixPath }
	const vsockPort = env.NAMZU_AGENT_VSOCK_PORT
	if (vsockPort !== undefined && vsockPort !== '') {
		// The init process bridges vsock to a stream and hands it to us as descriptor 3.
		return { kind: 'vsock', port: integer(env, 'NAMZU_AGENT_VSOCK_PORT', 1024), fd: 3 }
	}
	const tcpPort = env.NAMZU_AGENT_TCP_PORT
	if (tcpPort !== undefined && tcpPort !== '') {
		return {
			kind: 'tcp',
			port: integerVariable(env, 'NAMZU_AGENT_TCP_PORT', 0, { min: 0, max: 65_535 }),
		}
	}
	throw new AgentConfigError(
		'no listen mode configured: set NAMZU_AGENT_UNIX_PATH, NAMZU_AGENT_VSOCK_PORT or NAMZU_AGENT_TCP_PORT',
	)
}

export function loadAgentConfig(env: Env = process.env): AgentConfig {
	const bindToken = env.NAMZU_AGENT_BIND_TOKEN
	if (bindToken === '') {
		// The shape a downward-API injection takes when it resolved to nothing: never honour it.
		throw new AgentConfigError('NAMZU_AGENT_BIND_TOKEN is set but empty; refusing to start')
	}
	const requireTokenRaw = env.NAMZU_AGENT_REQUIRE_TOKEN
	const requireToken =
		requireTokenRaw !== undefined && requireTokenRaw !== '' && requireTokenRaw !== '0'
	const listen = listenMode(env)
	if (listen.kind === 'tcp' && bindToken === undefined && !requireToken) {
		throw new AgentConfigError(
			'NAMZU_AGENT_TCP_PORT requires NAMZU_AGENT_BIND_TOKEN or NAMZU_AGENT_REQUIRE_TOKEN; refusing to bind an unauthenticated listener',
		)
	}
	const maxFrameBytes = integer(env, 'NAMZU_AGENT_MAX_FRAME_BYTES', 256 * MiB)
	const maxPreauthFrameBytes = Math.min(
		integer(env, 'NAMZU_AGENT_MAX_PREAUTH_FRAME_BYTES', 8 * MiB),
		maxFrameBytes,
	)
	// Never less than one whole pre-auth frame (header included), or no caller could ever authenticate.
	const maxPreauthBufferBytes = Math.max(
		integer(env, 'NAMZU_AGENT_MAX_PREAUTH_BUFFER_BYTES', 32 * MiB),
		maxPreauthFrameBytes + FRAME_HEADER_BYTES,
	)
	const workspace = env.NAMZU_SANDBOX_WORKSPACE || '/workspace'
	if (!workspace.startsWith('/')) {
		throw new AgentConfigError(`NAMZU_SANDBOX_WORKSPACE must be absolute: ${workspace}`)
	}
	return {
		listen,
		...(bindToken === undefined ? {} : { bindToken }),
		requireToken,
		maxFrameBytes,
		maxPreauthFrameBytes,
		maxPreauthConnections: integer(env, 'NAMZU_AGENT_MAX_PREAUTH_CONNECTIONS', 64),
		maxPreauthBufferBytes,
		preauthIdleTimeoutMs: integer(env, 'NAMZU_AGENT_PREAUTH_IDLE_TIMEOUT_MS', 10_000),
		preauthDeadlineMs: integer(env, 'NAMZU_AGENT_PREAUTH_DEADLINE_MS', 10_000),
		refusalFlushGraceMs: integer(env, 'NAMZU_AGENT_REFUSAL_FLUSH_GRACE_MS', 1000),
		cancelGraceMs: integer(env, 'NAMZU_AGENT_CANCEL_GRACE_MS', 250, { allowZero: true }),
		cancelConfirmTimeoutMs: integer(env, 'NAMZU_AGENT_CANCEL_CONFIRM_TIMEOUT_MS', 5000),
		executionLeaseTtlMs: integer(env, 'NAMZU_AGENT_EXECUTION_LEASE_TTL_MS', 30_000),
		executionTerminalTtlMs: integer(env, 'NAMZU_AGENT_EXECUTION_TERMINAL_TTL_MS', 60_000),
		maxTrackedExecutions: integer(env, 'NAMZU_AGENT_MAX_TRACKED_EXECUTIONS', 1024),
		executionLogBytes: integer(env, 'NAMZU_AGENT_EXECUTION_LOG_BYTES', MiB),
		maxRetainedOutputLogs: integer(env, 'NAMZU_AGENT_MAX_RETAINED_OUTPUT_LOGS', 32),
		executionRetainedTtlMs: integer(env, 'NAMZU_AGENT_EXECUTION_RETAINED_TTL_MS', 10 * 60_000),
		readFileRangeBytes: integer(env, 'NAMZU_AGENT_READ_FILE_RANGE_BYTES', MiB),
		readFileStreamChunkBytes: integer(env, 'NAMZU_AGENT_READ_FILE_STREAM_CHUNK_BYTES', MiB),
		workspace,
		readRoots: roots(env, 'NAMZU_SANDBOX_READ_ROOTS'),
		writeRoots: roots(env, 'NAMZU_SANDBOX_WRITE_ROOTS'),
		maxTimeoutMs: integer(env, 'NAMZU_SANDBOX_MAX_TIMEOUT_MS', 30 * 60_000),
		defaultTimeoutMs: DEFAULT_EXECUTION_TIMEOUT_MS,
		defaultMaxOutputBytes: DEFAULT_MAX_OUTPUT_BYTES,
		lifecycle: loadLifecycleConfig(env),
		sessions: loadSessionConfig(env),
		workloadCgroups: parseWorkloadCgroups(env[WORKLOAD_CGROUPS_VARIABLE]),
		execAccounting: env.NAMZU_AGENT_EXEC_ACCOUNTING !== '0',
		spareShell: spareShell(env.NAMZU_AGENT_SPARE_SHELL),
		binaryFrames: env.NAMZU_AGENT_BINARY_FRAMES !== '0',
		executeReserves: env.NAMZU_AGENT_EXECUTE_RESERVES !== '0',
	}
}
