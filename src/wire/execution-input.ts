/**
 * What a host sends a running background command after it started (advertised as
 * `execution-input`): bytes for its stdin, the end of its stdin, and one named signal for its
 * process group. Only an `execute` with `retainOutput` and `openStdin: true` keeps its stdin open
 * for `execution-input`; any retained or id-named run takes `signal-execution`.
 */

/**
 * `execution-input`: `{ executionId, data?, end? }` → `{ ok: true }` once the bytes are handed to
 * the pipe (the guest waits while the pipe is full). `data` is base64; `end: true` closes stdin
 * after `data`. A run whose stdin is not open (never opened, closed, ended) is refused
 * `stdin_not_open`.
 */
export interface ExecutionInputRequest {
	readonly executionId: string
	readonly data?: string
	readonly end?: boolean
}

/** Bytes of one `execution-input` (before base64); a larger write is sent in pieces. */
export const MAX_EXECUTION_INPUT_BYTES = 1024 * 1024

/** The signals `signal-execution` delivers (to the command's whole process group). */
export const EXECUTION_SIGNALS = [
	'SIGTERM',
	'SIGKILL',
	'SIGINT',
	'SIGHUP',
	'SIGQUIT',
	'SIGUSR1',
	'SIGUSR2',
] as const

/** One of `EXECUTION_SIGNALS`. */
export type ExecutionSignal = (typeof EXECUTION_SIGNALS)[number]

export function isExecutionSignal(value: unknown): value is ExecutionSignal {
	return typeof value === 'string' && (EXECUTION_SIGNALS as readonly string[]).includes(value)
}

/**
 * `signal-execution`: `{ executionId, signal }` → `{ ok: true, delivered }`. `delivered` is false
 * when the run had already ended (nothing is signalled then: its process group may be reused).
 * `SIGKILL` also kills the command's cgroup, so a `setsid` descendant goes too.
 */
export interface SignalExecutionRequest {
	readonly executionId: string
	readonly signal: ExecutionSignal
}
