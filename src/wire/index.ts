// The wire's public names: the protocol version and feature names a guest advertises in `healthz`,
// the negotiated stream heartbeat, and the request / event shapes a caller meets. The frame codec,
// the base64 helpers and the op table are internal to the two ends.
export {
	AGENT_PROTOCOL_VERSION,
	type AgentFeature,
	EXECUTION_ATTACH_FEATURE,
	FLUSH_FEATURE,
	GUEST_BOOT_ID_FEATURE,
	LIST_FILES_FEATURE,
	QUIESCE_FEATURE,
	READ_FILE_STREAM_FEATURE,
	SESSIONS_FEATURE,
	STREAM_HEARTBEAT_FEATURE,
	WRITE_FILE_PARTS_FEATURE,
} from './features.js'
export {
	DEFAULT_STREAM_HEARTBEAT_MS,
	MIN_STREAM_HEARTBEAT_MS,
	STREAM_HEARTBEAT_MAX_ECHO_FACTOR,
	STREAM_HEARTBEAT_MISS_LIMIT,
	type StreamHeartbeat,
} from './heartbeat.js'
export type { QuiescedProcess, QuiesceScope } from './lifecycle-ops.js'
export type { ReadFileStreamEvent, ReadFileStreamRequest, WriteFilePart } from './protocol.js'
