/**
 * Every refusal code the guest agent answers, defined once for both ends. A refusal travels as
 * `{ ok: false, error }` (request-shaped ops) or `{ type: 'error', error }` (stream-shaped ops);
 * `error` is the code alone or `code: detail`. The agent builds the text with `formatRefusal`, the
 * host reads it back with `parseRefusal` and matches the typed code, never the wording. A failed
 * filesystem call is answered with Node's errno message (`ENOENT: no such file or directory, …`),
 * whose leading errno name is the code; a spawn failure of `execute` is its message as it stands.
 */
import type { ExecutionState } from './protocol.js'

/** Every refusal code the guest agent answers, each entry the code itself. */
export const AGENT_REFUSAL = {
	// ---- any op: framing, credential, admission -------------------------------------------------
	/** The token check failed; the connection is destroyed after the refusal. */
	unauthorized: 'unauthorized',
	/** `unknown_op: <op>`: the agent predates (or never had) the op. */
	unknown_op: 'unknown_op',
	/** `bad_frame_header: …`: the first bytes were not a frame header. */
	bad_frame_header: 'bad_frame_header',
	/** `frame_too_large: announced N bytes, limit L (VARIABLE)`. */
	frame_too_large: 'frame_too_large',
	/** A binary frame on a connection whose open request did not ask for binary frames. */
	binary_frame_not_negotiated: 'binary_frame_not_negotiated',
	/** Pre-auth bounds of the token modes (`… (NAMZU_AGENT_…)`). */
	preauth_deadline_exceeded: 'preauth_deadline_exceeded',
	preauth_buffer_exhausted: 'preauth_buffer_exhausted',
	preauth_idle_timeout: 'preauth_idle_timeout',
	too_many_unauthenticated_connections: 'too_many_unauthenticated_connections',
	/** The agent fenced itself after a cancellation it could not confirm; only healthz and cancel run. */
	agent_retiring: 'agent_retiring',
	/** A quiesce (or the SIGTERM drain) is running: new work is refused. */
	quiesce_in_progress: 'quiesce_in_progress',

	// ---- executions -------------------------------------------------------------------------------
	invalid_execution_id: 'invalid_execution_id',
	unknown_execution: 'unknown_execution',
	/** `execution_capacity: limit N (NAMZU_AGENT_MAX_TRACKED_EXECUTIONS)`. */
	execution_capacity: 'execution_capacity',
	/** The agent could not confirm a cancelled run ended; it is retiring. */
	cancellation_unconfirmed: 'cancellation_unconfirmed',
	execution_cancelled: 'execution_cancelled',
	/** `execution_not_reserved: <state>`: the id was already started. */
	execution_not_reserved: 'execution_not_reserved',
	/** `retained_output_capacity: limit N (NAMZU_AGENT_MAX_RETAINED_OUTPUT_LOGS)`. */
	retained_output_capacity: 'retained_output_capacity',
	output_not_retained: 'output_not_retained',
	/** A replay offset beyond the end of the output (executions and sessions). */
	invalid_offset: 'invalid_offset',
	missing_command: 'missing_command',
	invalid_args: 'invalid_args',
	invalid_env: 'invalid_env',
	/** `invalid_cwd: …` (execute, terminals, detached sessions). */
	invalid_cwd: 'invalid_cwd',
	invalid_stdin: 'invalid_stdin',
	invalid_retain_output: 'invalid_retain_output',
	invalid_keep_descendants: 'invalid_keep_descendants',
	retain_requires_execution_id: 'retain_requires_execution_id',
	invalid_max_output_bytes: 'invalid_max_output_bytes',
	/** `execution-input` to a run whose stdin is not open (never opened, closed, or ended). */
	stdin_not_open: 'stdin_not_open',
	/** `execution-input` / `signal-execution` body malformed (the detail names the field). */
	invalid_execution_input: 'invalid_execution_input',
	/** `invalid_timeout: … (NAMZU_SANDBOX_MAX_TIMEOUT_MS), got …`. */
	invalid_timeout: 'invalid_timeout',

	// ---- per-command cgroups (commands, terminals, detached sessions) ----------------------------
	/** `workload_cgroup_unavailable: …`: the command's group could not be made; it did not run. */
	workload_cgroup_unavailable: 'workload_cgroup_unavailable',
	/** `workload_cgroup_join_failed: …`: the child could not join its groups; it never ran. */
	workload_cgroup_join_failed: 'workload_cgroup_join_failed',

	// ---- files -----------------------------------------------------------------------------------
	missing_path: 'missing_path',
	/** `path_too_long: path must be at most 4096 bytes (UTF-8), got N bytes` (`wire/path-limits.ts`). */
	path_too_long: 'path_too_long',
	/** A component over 255 bytes (UTF-8); the detail never repeats the path. */
	path_component_too_long: 'path_component_too_long',
	/** A NUL byte anywhere in the path. */
	path_contains_nul: 'path_contains_nul',
	/** Every jail escape, lexical or through a symlink (`message`: `path escapes the workspace: …`). */
	path_escapes_workspace: 'path_escapes_workspace',
	read_file_not_a_regular_file: 'read_file_not_a_regular_file',
	read_file_stream_not_a_regular_file: 'read_file_stream_not_a_regular_file',
	read_file_range_requires_base64: 'read_file_range_requires_base64',
	read_file_invalid_offset: 'read_file_invalid_offset',
	read_file_invalid_length: 'read_file_invalid_length',
	/** `read_file_range_too_large: requested N bytes, limit L (NAMZU_AGENT_READ_FILE_RANGE_BYTES)`. */
	read_file_range_too_large: 'read_file_range_too_large',
	read_file_stream_unsized_too_large: 'read_file_stream_unsized_too_large',
	read_file_stream_short_read: 'read_file_stream_short_read',
	missing_path_or_content: 'missing_path_or_content',
	write_short_write: 'write_short_write',
	/** A streamed (binary-frame) `write-file` without a byte count `sizeBytes` ≥ 0. */
	write_stream_invalid_size: 'write_stream_invalid_size',
	/** `write_stream_size_mismatch: …`: the bytes sent disagree with `sizeBytes`. */
	write_stream_size_mismatch: 'write_stream_size_mismatch',
	/** A frame other than binary `data` or one `{ type: 'end' }` inside a streamed `write-file`. */
	write_stream_unexpected_frame: 'write_stream_unexpected_frame',
	write_mode_carry_failed: 'write_mode_carry_failed',
	mkdir_failed: 'mkdir_failed',
	write_part_invalid_shape: 'write_part_invalid_shape',
	write_part_invalid_offset: 'write_part_invalid_offset',
	write_part_missing_rename_target: 'write_part_missing_rename_target',
	write_part_not_a_temp_file: 'write_part_not_a_temp_file',
	write_part_in_flight: 'write_part_in_flight',
	write_part_offset_mismatch: 'write_part_offset_mismatch',
	write_part_short_write: 'write_part_short_write',

	// ---- terminals and tcp -----------------------------------------------------------------------
	invalid_terminal_size: 'invalid_terminal_size',
	invalid_terminal_command: 'invalid_terminal_command',
	invalid_terminal_args: 'invalid_terminal_args',
	invalid_terminal_env: 'invalid_terminal_env',
	invalid_loopback_target: 'invalid_loopback_target',
	tcp_invalid_data: 'tcp_invalid_data',
	tcp_data_frame_too_large: 'tcp_data_frame_too_large',

	// ---- sessions --------------------------------------------------------------------------------
	invalid_session_id: 'invalid_session_id',
	invalid_session_request: 'invalid_session_request',
	session_exists: 'session_exists',
	unknown_session: 'unknown_session',
	/** `session_capacity: limit N (NAMZU_AGENT_MAX_SESSIONS)`. */
	session_capacity: 'session_capacity',
	invalid_follow: 'invalid_follow',
	spawn_failed: 'spawn_failed',

	// ---- quiesce and flush -----------------------------------------------------------------------
	quiesce_invalid_grace: 'quiesce_invalid_grace',
	/** A process outlived SIGKILL (the reply also carries `message` and `pid`). */
	quiesce_unconfirmed: 'quiesce_unconfirmed',
	quiesce_unsupported_platform: 'quiesce_unsupported_platform',
	flush_invalid_timeout: 'flush_invalid_timeout',
	flush_unsupported: 'flush_unsupported',
	flush_unsupported_platform: 'flush_unsupported_platform',
	flush_unconfirmed: 'flush_unconfirmed',
	// ---- restored (restored.ts) ------------------------------------------------------------------
	/** `seed` is not base64 of exactly 32 bytes. */
	restored_invalid_seed: 'restored_invalid_seed',
	/** `token` is not a non-empty string of at most 1024 characters. */
	restored_invalid_token: 'restored_invalid_token',
	/** A `token` sent to an agent whose transport has none (unix, vsock): nothing to switch. */
	restored_token_unsupported: 'restored_token_unsupported',
	/** `release-listener` on an agent that does not listen on a unix path. */
	release_listener_unsupported: 'release_listener_unsupported',
	/** `relistenAfterMs` is not an integer 100..600000. */
	release_listener_invalid_bound: 'release_listener_invalid_bound',
	// ---- file verbs and watch (file-verbs.ts) --------------------------------------------------
	/** A file verb's body is malformed: `recursive`, `limit`, `cursor` or `to` (the detail names it). */
	invalid_file_request: 'invalid_file_request',
	/** `remove-path` / `rename-path` of the workspace (or another jail root) itself. */
	path_is_jail_root: 'path_is_jail_root',
	/** `watch-path` while `MAX_WATCHERS` watchers are held. */
	watch_capacity: 'watch_capacity',
	/** The kernel refused the watch (inotify limits, …); the detail is its errno message. */
	watch_failed: 'watch_failed',
} as const

/** One refusal code of `AGENT_REFUSAL`. */
export type AgentRefusalCode = (typeof AGENT_REFUSAL)[keyof typeof AGENT_REFUSAL]

/** Every `AgentRefusalCode`. */
export const AGENT_REFUSAL_CODES: readonly AgentRefusalCode[] = Object.freeze(
	Object.values(AGENT_REFUSAL),
)

const KNOWN: ReadonlySet<string> = new Set(AGENT_REFUSAL_CODES)

/** Whether `value` is a refusal code this build knows. */
export function isAgentRefusalCode(value: unknown): value is AgentRefusalCode {
	return typeof value === 'string' && KNOWN.has(value)
}

/** The `error` text of a refusal: the code alone, or `code: detail`. */
export function formatRefusal(code: AgentRefusalCode, detail?: string): string {
	return detail === undefined ? code : `${code}: ${detail}`
}

/**
 * A refusal as the host reads it: the text exactly as sent, its leading code, and the fields a
 * refusal may carry beside `error`.
 */
export interface WireRefusal {
	/** The `error` string exactly as the guest sent it. */
	readonly text: string
	/**
	 * The leading code: a code of this wire, an errno name (`ENOENT`), or whatever identifier an
	 * agent of another release led with; '' when the text does not start with one.
	 */
	readonly code: string
	/** `code` when it is one `AGENT_REFUSAL` defines. */
	readonly known?: AgentRefusalCode
	/** What follows `code: ` (or `code:`), when the text has it. */
	readonly detail?: string
	/** The reply's human-readable `message`, when it carried one. */
	readonly message?: string
	/** Execution refusals: where the execution is (`'reserved'` = it never started). */
	readonly executionState?: ExecutionState
	/** Offset refusals: where the output currently ends. */
	readonly nextOffset?: number
	/** `quiesce_unconfirmed`: the process the guest could not confirm gone. */
	readonly pid?: number
}

const LEADING_CODE = /^[A-Za-z_][A-Za-z0-9_]*/

/** Splits a refusal text into its code and detail (pure; never throws). */
export function parseRefusal(
	text: string,
	fields: Omit<WireRefusal, 'text' | 'code' | 'known' | 'detail'> = {},
): WireRefusal {
	const code = LEADING_CODE.exec(text)?.[0] ?? ''
	const rest = text.slice(code.length)
	const detail =
		code !== '' && rest.startsWith(':') ? rest.slice(rest.startsWith(': ') ? 2 : 1) : undefined
	return {
		text,
		code,
		...(isAgentRefusalCode(code) && (rest === '' || detail !== undefined) ? { known: code } : {}),
		...(detail === undefined ? {} : { detail }),
		...fields,
	}
}

/** An errno name (`ENOENT`, `EACCES`, …): the code a failed filesystem call is answered with. */
export function isErrnoCode(code: string): boolean {
	return /^E[A-Z0-9]+$/.test(code)
}
