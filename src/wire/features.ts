/** The wire protocol version. Additive ops and fields never bump it; features are advertised instead. */
export const AGENT_PROTOCOL_VERSION = 2
/** The spec's name for the same version, as the microVM tier's guests report it in `healthz`. */
export const FIRECRACKER_AGENT_PROTOCOL_VERSION = AGENT_PROTOCOL_VERSION

/** Guest can append a `write-file` body in parts to a temp sibling and rename it at the end. */
export const WRITE_FILE_PARTS_FEATURE = 'write-file-parts'
/** Guest serves `read-file-stream` and ranged `read-file`. */
export const READ_FILE_STREAM_FEATURE = 'read-file-stream'
/** Guest serves `list-files` (recursive regular-file listing). */
export const LIST_FILES_FEATURE = 'list-files'
/**
 * Guest serves `list-files-stream`: the same listing as `list-files`, as events of at most
 * `LIST_FILES_BATCH_ENTRIES` entries, so no one frame grows with the workspace.
 */
export const LIST_FILES_STREAM_FEATURE = 'list-files-stream'
/** Guest retains output of executions that ask for it and serves `attach-execution`. */
export const EXECUTION_ATTACH_FEATURE = 'execution-attach'
/** Guest stamps `guestBootId` on reserve, cancel, read-file, write-file and stream `ready`. */
export const GUEST_BOOT_ID_FEATURE = 'guest-boot-id'
/** Guest serves `quiesce` (stop every guest process, keep serving). */
export const QUIESCE_FEATURE = 'quiesce'
/** Guest serves `flush` (`sync -f` of the workspace filesystem); advertised only when it can. */
export const FLUSH_FEATURE = 'flush'
/** Guest negotiates `heartbeatMs` on terminal / tcp-connect streams (heartbeat.ts). */
export const STREAM_HEARTBEAT_FEATURE = 'stream-heartbeat'

/**
 * Guest answers (and accepts) binary data frames (binary-frame.ts) on a connection whose open
 * request carried `binaryFrames: true`: `read-file-stream`, `execute`, `terminal`, `tcp-connect`,
 * and the streamed `write-file` (content as binary frames after the envelope).
 */
export const BINARY_FRAMES_FEATURE = 'binary-frames'

/**
 * Guest reserves on `execute`: a request with `reserve: true` and an id the guest has not seen runs
 * it in the same step (one round trip instead of `reserve-execution` first), and a
 * `cancel-execution` with `fence: true` for an id it has not seen fences that id, so an `execute`
 * arriving after it is refused (`execution_cancelled`) and the command provably never ran.
 */
export const EXECUTE_RESERVES_FEATURE = 'execute-reserves'

/** Guest serves persistent terminals and `start-detached` / `attach-` / `list-` / `kill-session`. */
export const SESSIONS_FEATURE = 'sessions'

/**
 * Guest serves the file verbs `stat-path`, `remove-path`, `make-directory`, `rename-path` and
 * `list-directory` (file-verbs.ts).
 */
export const FILE_VERBS_FEATURE = 'file-verbs'

/** Guest serves `watch-path`: inotify changes under a path, resumable by cursor (file-verbs.ts). */
export const WATCH_FEATURE = 'watch'

/**
 * Guest keeps a retained run's stdin open on `openStdin: true` and serves `execution-input` and
 * `signal-execution` (execution-input.ts).
 */
export const EXECUTION_INPUT_FEATURE = 'execution-input'

/**
 * Guest serves `restored` (restored.ts): after a memory restore it mixes the host's seed into its
 * random sources, takes a new boot id and, on token transports, switches to a new token.
 */
export const RESTORED_FEATURE = 'restored'

/**
 * Guest serves `release-listener` (restored.ts): it answers, closes its unix listener and every
 * connection, and binds again on SIGUSR2 — what a gVisor memory checkpoint needs.
 */
export const RELEASE_LISTENER_FEATURE = 'release-listener'

/** A feature name a guest advertises in `healthz`. */
export type AgentFeature =
	| typeof WRITE_FILE_PARTS_FEATURE
	| typeof READ_FILE_STREAM_FEATURE
	| typeof LIST_FILES_FEATURE
	| typeof LIST_FILES_STREAM_FEATURE
	| typeof SESSIONS_FEATURE
	| typeof EXECUTION_ATTACH_FEATURE
	| typeof GUEST_BOOT_ID_FEATURE
	| typeof QUIESCE_FEATURE
	| typeof FLUSH_FEATURE
	| typeof STREAM_HEARTBEAT_FEATURE
	| typeof BINARY_FRAMES_FEATURE
	| typeof EXECUTE_RESERVES_FEATURE
	| typeof FILE_VERBS_FEATURE
	| typeof WATCH_FEATURE
	| typeof EXECUTION_INPUT_FEATURE
	| typeof RESTORED_FEATURE
	| typeof RELEASE_LISTENER_FEATURE
