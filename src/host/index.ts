// Public surface of the host layer: dialing, the agent transport, the execution controller and
// the one Sandbox over an agent handle.

export { agentExecutionAdapter } from './exec/agent-execution-adapter.js'
export type {
	AttachExecutionOptions,
	CancelExecutionOptions,
	DetachableExecOptions,
} from './exec/detachable-exec-options.js'
export { DEFAULT_REATTACH_WINDOW_MS, isDetachable } from './exec/detachable-exec-options.js'
export type { DetachableExecutionHost } from './exec/detachable-execution.js'
export {
	attachToExecution,
	cancelExecutionById,
	execDetachable,
	requireExecutionAttach,
} from './exec/detachable-execution.js'
export type { ExecutionDetachReason } from './exec/detachable-execution-errors.js'
export {
	ExecutionAttachUnsupportedError,
	ExecutionDetachedError,
} from './exec/detachable-execution-errors.js'
export type { AgentExecOptions } from './exec/exec-options.js'
export type { RemoteExecutionTiming } from './exec/execution-timing.js'
export type {
	RemoteExecuteRequest,
	RemoteExecutionAdapter,
	RemoteExecutionControllerOptions,
} from './exec/remote-execution-controller.js'
export {
	DEFAULT_CANCEL_CONFIRM_TIMEOUT_MS,
	DEFAULT_CONTROL_REQUEST_TIMEOUT_MS,
	DEFAULT_EXECUTION_OBSERVATION_GRACE_MS,
	DEFAULT_EXECUTION_TIMEOUT_MS,
	DEFAULT_RESULT_DRAIN_TIMEOUT_MS,
	RemoteExecutionController,
} from './exec/remote-execution-controller.js'
export {
	RemoteControlTimeoutError,
	RemoteResultIncompleteError,
} from './exec/remote-execution-errors.js'
export type {
	RemoteCancellationAcknowledgement,
	RemoteReservation,
	RemoteTerminalMetadata,
} from './exec/remote-execution-messages.js'
export type { AgentReadFileOptions } from './files/agent-file-read.js'
export {
	listFilesThroughAgent,
	readFileStreamThroughAgent,
	readFileThroughAgent,
} from './files/agent-file-read.js'
export { writeFileThroughAgent } from './files/agent-file-write.js'
export { PART_TEMP_BASENAME_MAX_CHARS } from './files/write-file-plan.js'
export type {
	FlushOptions,
	FlushReport,
	QuiesceOptions,
	QuiesceReport,
} from './lifecycle/agent-lifecycle-ops.js'
export { flushThroughAgent, quiesceThroughAgent } from './lifecycle/agent-lifecycle-ops.js'
export type { AttachRefusal } from './refusals/execution-refusal-errors.js'
export {
	ExecutionCancelRefusedError,
	ExecutionNotAttachableError,
	RemoteCancellationUnknownError,
	RemoteCommandError,
	RemoteExecutionRefusedError,
} from './refusals/execution-refusal-errors.js'
export { RemoteByteCountError, RemoteProtocolError } from './refusals/guest-protocol-errors.js'
export {
	FlushUnconfirmedError,
	FlushUnsupportedError,
	QuiesceUnconfirmedError,
	QuiesceUnsupportedError,
} from './refusals/lifecycle-errors.js'
export { AgentOpRefusedError, AgentUnauthorizedError } from './refusals/op-refused-errors.js'
export { SessionRefusedError } from './refusals/session-refused-error.js'
export { agentBundlePath } from './sandbox/agent-bundle-path.js'
export type { AgentSandboxOptions } from './sandbox/agent-sandbox.js'
export {
	AgentSandbox,
	createAgentSandbox,
	DESTROY_IN_FLIGHT_SETTLE_MS,
} from './sandbox/agent-sandbox.js'
export {
	LOOPBACK_TCP_HOSTS,
	SandboxRetiredError,
	SandboxTcpTargetRefusedError,
} from './sandbox/agent-sandbox-errors.js'
export type { SessionTerminal } from './sessions/agent-session-terminal.js'
export { AgentSessionTerminal } from './sessions/agent-session-terminal.js'
export type {
	AttachTerminalOptions,
	KillSessionOptions,
	ListSessionsOptions,
	PersistentTerminalOptions,
	ReadSessionOptions,
	StartDetachedOptions,
} from './sessions/agent-sessions.js'
export { AgentSessions, isPersistentTerminalOptions } from './sessions/agent-sessions.js'
export type { SessionDetachReason } from './sessions/session-errors.js'
export { AgentSessionDetachedError, SessionsUnsupportedError } from './sessions/session-errors.js'
export type {
	KilledSession,
	SessionKind,
	SessionState,
	SessionSummary,
	StartedSession,
} from './sessions/session-summary.js'
export type { SandboxAgentHandle, SandboxAgentHandleKind } from './transport/agent-handle.js'
export { describeAgentHandle } from './transport/agent-handle.js'
export { AgentTcpConnection } from './transport/agent-tcp-connection.js'
export { AgentTerminalSession } from './transport/agent-terminal-session.js'
export type { AgentRequestOptions } from './transport/agent-transport.js'
export { AgentTransport } from './transport/agent-transport.js'
export type {
	AgentDialEvent,
	AgentTransportOptions,
	ResolvedAgentTransportOptions,
} from './transport/agent-transport-options.js'
export {
	DEFAULT_AGENT_TRANSPORT_OPTIONS,
	DEFAULT_MAX_READ_FILE_BYTES,
	DEFAULT_MAX_WRITE_FILE_BYTES,
	DEFAULT_SESSION_READ_MAX_BYTES,
	GUEST_FRAME_LIMIT_BYTES,
	POST_RESPONSE_CLOSE_TIMEOUT_MS,
	REMOTE_EXECUTION_PROTOCOL_VERSION,
	TCP_PREAUTH_FRAME_LIMIT_BYTES,
	WRITE_PART_DISCARD_TIMEOUT_MS,
} from './transport/agent-transport-options.js'
export type { DialOptions } from './transport/dial.js'
export { dialAgent } from './transport/dial.js'
export type { AgentHealth } from './transport/healthz-reply.js'
export { AgentStreamSilentError } from './transport/stream-silent-error.js'
export {
	AgentConnectionError,
	AgentDialFailedError,
	AgentFrameTooLargeError,
	AgentPreauthFrameTooLargeError,
	AgentReadFileStreamUnsupportedError,
	AgentReadFileTooLargeError,
	AgentReadTimeoutError,
	AgentWriteFileTooLargeError,
} from './transport/transport-errors.js'
