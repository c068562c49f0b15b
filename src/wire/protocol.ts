/**
 * Op names, request bodies, replies and stream events of the guest-agent wire. One request per
 * connection: the first frame is the envelope; a request-shaped reply is one frame then close; a
 * stream-shaped reply is event frames, the zero-length terminator, then close.
 */

/**
 * The per-instance credential a request envelope may carry. Written only on a routed (`tcp`)
 * handle, whose agent refuses every op but `healthz` without exactly this value; absent on the
 * vsock and unix transports, whose channel is host-to-guest only and never crosses guest egress.
 */
export interface AgentRequestCredential {
	readonly token?: string
}

export interface AgentRequestEnvelope extends AgentRequestCredential {
	readonly op: string
	readonly body?: unknown
}

/** A request-shaped refusal (`refusals.ts` defines every `error` code). */
export interface AgentRefusal {
	readonly ok: false
	readonly error: string
	readonly message?: string
	/** Execution refusals: where the execution is. */
	readonly executionState?: ExecutionState
	/** Offset refusals: where the output currently ends. */
	readonly nextOffset?: number
}

/** A stream-shaped refusal, followed by the terminator. */
export interface AgentStreamRefusal {
	readonly type: 'error'
	readonly error: string
	readonly executionState?: ExecutionState
	readonly nextOffset?: number
}

// ---- healthz -----------------------------------------------------------------------------------

export interface HealthzReply {
	readonly ok: boolean
	readonly protocolVersion: number
	readonly features: readonly string[]
	/** Present (true) once the agent fenced itself after an unconfirmable cancellation. */
	readonly retiring?: boolean
}

// ---- reserve-execution / execute / cancel-execution --------------------------------------------

/**
 * Wall-clock bound of an exec whose caller names none (5 min): the one value of the default exec
 * timeout. The host sends it (or the sandbox's `defaultTimeoutMs`) on every `execute`; the agent
 * applies it to a request that carries no `timeoutMs`.
 */
export const DEFAULT_EXECUTION_TIMEOUT_MS = 300_000

/** Per-stream output cap of an `execute` that names none (100 MiB); the host holds to it too. */
export const DEFAULT_MAX_OUTPUT_BYTES = 104_857_600

/** An execution's end state: cancelled, completed or failed. */
export type ExecutionTerminalState = 'cancelled' | 'completed' | 'failed'

/** Every state an execution record can report (`'reserved'` = never started). */
export type ExecutionState = 'reserved' | 'running' | ExecutionTerminalState

export const EXECUTION_TERMINAL_STATES: readonly ExecutionTerminalState[] = [
	'cancelled',
	'completed',
	'failed',
]

export const EXECUTION_STATES: readonly ExecutionState[] = [
	'reserved',
	'running',
	...EXECUTION_TERMINAL_STATES,
]

export function isExecutionState(value: unknown): value is ExecutionState {
	return typeof value === 'string' && (EXECUTION_STATES as readonly string[]).includes(value)
}

export function isExecutionTerminalState(value: unknown): value is ExecutionTerminalState {
	return (
		typeof value === 'string' && (EXECUTION_TERMINAL_STATES as readonly string[]).includes(value)
	)
}

export interface ReserveExecutionRequest {
	readonly executionId?: string
}

export interface ReserveExecutionReply {
	readonly ok: true
	readonly protocolVersion: number
	/** `exec_<uuid v4>`. */
	readonly executionId: string
	/** Epoch milliseconds after which an unused reservation lapses. */
	readonly leaseExpiresAt: number
	/** The agent process that answered (changes when the guest restarts). */
	readonly guestBootId?: string
	/** Only when the caller named the id: where that execution is (held ids are not re-reserved). */
	readonly state?: ExecutionState
	/** Held id whose output is retained, and the offset the next byte will get. */
	readonly retainedOutput?: boolean
	readonly outputOffset?: number
}

/** `execute`: run a reserved execution (argv, cwd, env, stdin, bounds). */
export interface ExecuteRequest {
	readonly executionId?: string
	readonly command: string
	readonly args?: readonly string[]
	readonly cwd?: string
	readonly env?: Readonly<Record<string, string>>
	/** UTF-8 written to the child's stdin, which is then closed. */
	readonly stdin?: string
	readonly timeoutMs?: number
	/** Per-stream capture cap; output past it is dropped and the result says `...Truncated`. */
	readonly maxOutputBytes?: number
	/** Keep the output in the guest (requires `executionId`) so the run survives its connection. */
	readonly retainOutput?: boolean
	/**
	 * Reserve `executionId` in this request when the guest has not seen it (requires the id; only
	 * to a guest advertising `EXECUTE_RESERVES_FEATURE`); a fenced id is refused.
	 */
	readonly reserve?: boolean
	/**
	 * false: the command's whole tree is killed when its own process exits. Default true: what it
	 * started in the background runs on (the call still ends when the command's process exits).
	 */
	readonly keepDescendants?: boolean
	/**
	 * Keep stdin open for `execution-input` (needs `retainOutput`; only to a guest advertising
	 * `execution-input`); `stdin` is then not allowed.
	 */
	readonly openStdin?: boolean
}

/** What a finished run reports: the `result` event, and the `result` of a cancel or an attach. */
export interface ExecutionTerminalMetadata extends ExecutionUsage {
	readonly exitCode: number
	readonly timedOut: boolean
	readonly durationMs: number
	readonly signal?: string
	/** This agent always sends both flags; a peer that predates the output caps sends neither. */
	readonly stdoutTruncated?: boolean
	readonly stderrTruncated?: boolean
}

/**
 * What a command's tree used, from its own cgroups, read when the run settles (a background
 * descendant's use until then included). Each field only where the guest's cgroups count it.
 */
export interface ExecutionUsage {
	/** A process of the tree was killed by the OOM killer. */
	readonly oomKilled?: boolean
	readonly cpuUserMs?: number
	readonly cpuSystemMs?: number
	readonly peakMemoryBytes?: number
	readonly ioReadBytes?: number
	readonly ioWriteBytes?: number
}

/** The `result` event that ends an execution: exit code or signal, end state, output accounting. */
export interface ExecResultEvent extends ExecutionTerminalMetadata {
	readonly type: 'result'
	/** True when the run ended because of a `cancel-execution`. */
	readonly cancelled?: boolean
}

export type ExecEvent =
	| { readonly type: 'stdout_delta'; readonly data: string }
	| { readonly type: 'stderr_delta'; readonly data: string }
	| ExecResultEvent
	| { readonly type: 'error'; readonly error: string }

export interface CancelExecutionRequest {
	readonly executionId: string
	/**
	 * An id the guest has not seen is fenced (recorded cancelled, never started) instead of
	 * refused `unknown_execution` (only to a guest advertising `EXECUTE_RESERVES_FEATURE`).
	 */
	readonly fence?: boolean
}

/** The guest's answer to `cancel-execution`: the state the execution was found in. */
export interface CancelExecutionReply {
	readonly ok: true
	readonly state: ExecutionTerminalState
	/** Whether the process was ever spawned. */
	readonly started: boolean
	readonly result?: Omit<ExecResultEvent, 'type'>
	readonly error?: string
	readonly guestBootId?: string
}

// ---- retained executions: attach-execution ------------------------------------------------------

/** A delta of a retained run: its place in the one interleaved byte-offset space. */
export interface RetainedDeltaEvent {
	readonly type: 'stdout_delta' | 'stderr_delta'
	readonly data: string
	readonly offset: number
	readonly nextOffset: number
}

/** `attach-execution`: follow a detached execution from a byte offset. */
export interface AttachExecutionRequest {
	readonly executionId: string
	/** Default 0: everything still held. */
	readonly fromOffset?: number
}

export type AttachExecutionEvent =
	| {
			readonly type: 'attached'
			readonly executionId: string
			readonly state: ExecutionState
			/** Where the replay starts (≥ the requested offset when bytes were evicted). */
			readonly fromOffset: number
			readonly droppedBytes: number
	  }
	| RetainedDeltaEvent
	| {
			readonly type: 'attach_result'
			readonly executionId: string
			readonly outcome: ExecutionTerminalState
			readonly started: boolean
			readonly result?: Omit<ExecResultEvent, 'type'>
			readonly error?: string
			readonly nextOffset: number
	  }
	| {
			readonly type: 'error'
			readonly error: string
			readonly executionState?: ExecutionState
			readonly nextOffset?: number
	  }

// ---- files -------------------------------------------------------------------------------------

export interface ReadFileRequest {
	readonly path: string
	readonly encoding?: 'base64' | 'utf8'
	readonly offset?: number
	readonly length?: number
}

export interface ReadFileReply {
	readonly ok: true
	readonly content: string
	/** Size of the whole file, not of the slice. */
	readonly sizeBytes: number
	readonly encoding: 'base64' | 'utf8'
	readonly offset?: number
	readonly bytesRead?: number
	readonly guestBootId?: string
}

/** The body of a `read-file-stream` request. */
export interface ReadFileStreamRequest {
	readonly path: string
	readonly offset?: number
	readonly length?: number
}

/** One event of a `read-file-stream` answer. */
export type ReadFileStreamEvent =
	| {
			readonly type: 'meta'
			readonly sizeBytes: number
			readonly offset: number
			readonly length: number
	  }
	| { readonly type: 'data'; readonly data: string }
	| { readonly type: 'end'; readonly bytesSent: number }
	| { readonly type: 'error'; readonly error: string }

/** One part of a large `write-file`, at its offset. */
export interface WriteFilePart {
	/** Byte offset this part starts at; must equal the temp file's current size (0 truncates). */
	readonly offset?: number
	/** Last part: fsync, carry the target's mode, rename onto `renameTo`, fsync the directory. */
	readonly final?: boolean
	readonly renameTo?: string
	/** Remove the named `.namzu-write-….part` temp file (missing counts as success). */
	readonly discard?: boolean
}

export interface WriteFileRequest {
	/** The target; for a `part`, the temp file. */
	readonly path: string
	readonly content: string
	readonly encoding?: 'base64' | 'utf8'
	readonly part?: WriteFilePart
}

export interface WriteFileReply {
	readonly ok: true
	readonly bytesWritten: number
	readonly guestBootId?: string
	/** Present on a final part: size of the renamed file. */
	readonly sizeBytes?: number
	readonly discarded?: boolean
}

export interface ListFilesRequest {
	readonly path: string
}

export interface ListFilesReply {
	readonly ok: true
	readonly entries: ReadonlyArray<{ readonly path: string; readonly size: number }>
}

/** Entries per `entries` event of `list-files-stream` (a frame far below its reply ceiling). */
export const LIST_FILES_BATCH_ENTRIES = 512

/**
 * `list-files-stream` (body as `list-files`): `entries` events in path order, then one `end`
 * carrying how many were sent; a refusal is a stream `error` event.
 */
export type ListFilesStreamEvent =
	| {
			readonly type: 'entries'
			readonly entries: ReadonlyArray<{ readonly path: string; readonly size: number }>
	  }
	| { readonly type: 'end'; readonly count: number }
	| { readonly type: 'error'; readonly error: string }

// ---- terminal ----------------------------------------------------------------------------------

/** `terminal`: open a PTY running a shell or command. */
export interface TerminalRequest {
	/** Default `/bin/sh`. */
	readonly command?: string
	readonly args?: readonly string[]
	readonly cwd?: string
	readonly env?: Readonly<Record<string, string>>
	/** Integers 1..1000. */
	readonly cols: number
	readonly rows: number
	/** Together with `persistent: true`: the PTY joins the session registry (wire/sessions.ts). */
	readonly sessionId?: string
	readonly persistent?: true
}

export type TerminalServerEvent =
	| { readonly type: 'ready'; readonly guestBootId?: string }
	| { readonly type: 'data'; readonly data: string }
	| { readonly type: 'exit'; readonly exitCode: number; readonly signal?: number }
	| { readonly type: 'error'; readonly error: string }

export type TerminalClientEvent =
	| { readonly type: 'input'; readonly data: string }
	| { readonly type: 'resize'; readonly cols: number; readonly rows: number }
	| { readonly type: 'kill'; readonly signal?: string }

// ---- tcp-connect -------------------------------------------------------------------------------

/** `tcp-connect`: open a connection to a port on the guest's loopback. */
export interface TcpConnectRequest {
	/** Loopback only; default `127.0.0.1`. */
	readonly host?: '127.0.0.1' | '::1'
	readonly port: number
}

export type TcpServerEvent =
	| { readonly type: 'ready'; readonly guestBootId?: string }
	| { readonly type: 'data'; readonly data: string }
	| { readonly type: 'end' }
	| { readonly type: 'error'; readonly error: string }

export type TcpClientEvent =
	| { readonly type: 'data'; readonly data: string }
	| { readonly type: 'end' }
	| { readonly type: 'destroy' }

// ---- op names ----------------------------------------------------------------------------------

/**
 * Every op the agent serves, once: the agent's dispatcher (`agent/ops/registry.ts`) is keyed by
 * exactly these names, and the host's calls name their op through this table.
 */
export const AGENT_OP = {
	healthz: 'healthz',
	reserveExecution: 'reserve-execution',
	execute: 'execute',
	cancelExecution: 'cancel-execution',
	attachExecution: 'attach-execution',
	executionInput: 'execution-input',
	signalExecution: 'signal-execution',
	readFile: 'read-file',
	readFileStream: 'read-file-stream',
	writeFile: 'write-file',
	listFiles: 'list-files',
	listFilesStream: 'list-files-stream',
	terminal: 'terminal',
	tcpConnect: 'tcp-connect',
	quiesce: 'quiesce',
	flush: 'flush',
	startDetached: 'start-detached',
	attachSession: 'attach-session',
	listSessions: 'list-sessions',
	killSession: 'kill-session',
	statPath: 'stat-path',
	removePath: 'remove-path',
	makeDirectory: 'make-directory',
	renamePath: 'rename-path',
	listDirectory: 'list-directory',
	watchPath: 'watch-path',
	restored: 'restored',
	releaseListener: 'release-listener',
} as const

/** One op name as it goes on the wire (a value of `AGENT_OP`). */
export type AgentOp = (typeof AGENT_OP)[keyof typeof AGENT_OP]

/** The op names as a list, in the table's order. */
export const AGENT_OPS: readonly AgentOp[] = Object.values(AGENT_OP)
