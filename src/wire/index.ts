// The wire's public names: the protocol version and feature names a guest advertises in `healthz`,
// the negotiated stream heartbeat, the output cap both ends apply, the request / reply / event shapes a
// caller meets (as types), the op table (`AgentTransport` takes only an `AgentOp`) and the refusal
// code table. The frame codec and the base64 helpers are internal to the two ends.
export {
	AGENT_PROTOCOL_VERSION,
	type AgentFeature,
	BINARY_FRAMES_FEATURE,
	EXECUTE_RESERVES_FEATURE,
	EXECUTION_ATTACH_FEATURE,
	EXECUTION_INPUT_FEATURE,
	FILE_VERBS_FEATURE,
	FIRECRACKER_AGENT_PROTOCOL_VERSION,
	FLUSH_FEATURE,
	GUEST_BOOT_ID_FEATURE,
	LIST_FILES_FEATURE,
	LIST_FILES_STREAM_FEATURE,
	QUIESCE_FEATURE,
	READ_FILE_STREAM_FEATURE,
	RELEASE_LISTENER_FEATURE,
	RESTORED_FEATURE,
	SESSIONS_FEATURE,
	STREAM_HEARTBEAT_FEATURE,
	WATCH_FEATURE,
	WRITE_FILE_PARTS_FEATURE,
} from './features.js'
export {
	DEFAULT_STREAM_HEARTBEAT_MS,
	MIN_STREAM_HEARTBEAT_MS,
	STREAM_HEARTBEAT_MAX_ECHO_FACTOR,
	STREAM_HEARTBEAT_MISS_LIMIT,
	type StreamHeartbeat,
} from './heartbeat.js'
export type { FlushReply, QuiescedProcess, QuiesceReply, QuiesceScope } from './lifecycle-ops.js'
export {
	AGENT_OP,
	type AgentOp,
	type AgentRequestCredential,
	type AttachExecutionRequest,
	type CancelExecutionReply,
	DEFAULT_MAX_OUTPUT_BYTES,
	type ExecResultEvent,
	type ExecuteRequest,
	type ExecutionState,
	type ExecutionTerminalMetadata,
	type ExecutionTerminalState,
	type ReadFileStreamEvent,
	type ReadFileStreamRequest,
	type TcpConnectRequest,
	type TerminalRequest,
	type WriteFilePart,
} from './protocol.js'
// The refusal code table, for `@namzu/sandbox/agent` only: a tier of your own that calls
// `AgentTransport` reads a refusal's typed code with these. The root's callers meet refusals as
// errors (`AgentOpRefusedError.refusal.code` is the code as a string).
export {
	AGENT_REFUSAL,
	AGENT_REFUSAL_CODES,
	type AgentRefusalCode,
	isAgentRefusalCode,
	parseRefusal,
	type WireRefusal,
} from './refusals.js'
export type {
	ReleaseListenerReply,
	ReleaseListenerRequest,
	RestoredReply,
	RestoredRequest,
} from './restored.js'
export type { SessionSummaryWire } from './sessions.js'
