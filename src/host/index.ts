// Public surface of the host layer: dialing, the agent transport, the execution controller and
// the one Sandbox over an agent handle.

export { agentBundlePath } from './agent-bundle-path.js'
export { agentExecutionAdapter } from './agent-execution-adapter.js'
export type { SandboxAgentHandle, SandboxAgentHandleKind } from './agent-handle.js'
export { describeAgentHandle } from './agent-handle.js'
export type {
	FlushOptions,
	FlushReport,
	QuiesceOptions,
	QuiesceReport,
} from './agent-lifecycle-ops.js'
export { flushThroughAgent, quiesceThroughAgent } from './agent-lifecycle-ops.js'
export type { AgentSandboxOptions } from './agent-sandbox.js'
export { AgentSandbox, createAgentSandbox, DESTROY_IN_FLIGHT_SETTLE_MS } from './agent-sandbox.js'
export {
	LOOPBACK_TCP_HOSTS,
	SandboxRetiredError,
	SandboxTcpTargetRefusedError,
} from './agent-sandbox-errors.js'
export type { SessionTerminal } from './agent-session-terminal.js'
export { AgentSessionTerminal } from './agent-session-terminal.js'
export type {
	AttachTerminalOptions,
	KillSessionOptions,
	ListSessionsOptions,
	PersistentTerminalOptions,
	ReadSessionOptions,
	StartDetachedOptions,
} from './agent-sessions.js'
export { AgentSessions, isPersistentTerminalOptions } from './agent-sessions.js'
export { AgentTcpConnection } from './agent-tcp-connection.js'
export { AgentTerminalSession } from './agent-terminal-session.js'
export type { AgentReadFileOptions, AgentRequestOptions } from './agent-transport.js'
export { AgentTransport } from './agent-transport.js'
export type {
	AgentDialEvent,
	AgentTransportOptions,
	ResolvedAgentTransportOptions,
} from './agent-transport-options.js'
export {
	DEFAULT_AGENT_TRANSPORT_OPTIONS,
	DEFAULT_MAX_WRITE_FILE_BYTES,
	GUEST_FRAME_LIMIT_BYTES,
	POST_RESPONSE_CLOSE_TIMEOUT_MS,
	REMOTE_EXECUTION_PROTOCOL_VERSION,
	TCP_PREAUTH_FRAME_LIMIT_BYTES,
	WRITE_PART_DISCARD_TIMEOUT_MS,
} from './agent-transport-options.js'
export type {
	AttachExecutionOptions,
	CancelExecutionOptions,
	DetachableExecOptions,
} from './detachable-exec-options.js'
export { DEFAULT_REATTACH_WINDOW_MS, isDetachable } from './detachable-exec-options.js'
export type { DetachableExecutionHost } from './detachable-execution.js'
export {
	attachToExecution,
	cancelExecutionById,
	execDetachable,
	requireExecutionAttach,
} from './detachable-execution.js'
export type { AttachRefusal, ExecutionDetachReason } from './detachable-execution-errors.js'
export {
	ExecutionAttachUnsupportedError,
	ExecutionCancelRefusedError,
	ExecutionDetachedError,
	ExecutionNotAttachableError,
} from './detachable-execution-errors.js'
export type { DialOptions } from './dial.js'
export { dialAgent } from './dial.js'
export type { RemoteExecutionTiming } from './execution-timing.js'
export type { AgentHealth } from './healthz-reply.js'
export {
	FlushUnconfirmedError,
	FlushUnsupportedError,
	QuiesceUnconfirmedError,
	QuiesceUnsupportedError,
} from './lifecycle-errors.js'
export type {
	RemoteExecuteRequest,
	RemoteExecutionAdapter,
	RemoteExecutionControllerOptions,
} from './remote-execution-controller.js'
export {
	DEFAULT_CANCEL_CONFIRM_TIMEOUT_MS,
	DEFAULT_CONTROL_REQUEST_TIMEOUT_MS,
	DEFAULT_EXECUTION_OBSERVATION_GRACE_MS,
	DEFAULT_EXECUTION_TIMEOUT_MS,
	DEFAULT_RESULT_DRAIN_TIMEOUT_MS,
	RemoteExecutionController,
} from './remote-execution-controller.js'
export {
	RemoteCancellationUnknownError,
	RemoteCommandError,
	RemoteControlTimeoutError,
	RemoteExecutionRefusedError,
	RemoteProtocolError,
	RemoteResultIncompleteError,
} from './remote-execution-errors.js'
export type {
	RemoteCancellationAcknowledgement,
	RemoteReservation,
	RemoteTerminalMetadata,
} from './remote-execution-reply.js'
export type { SessionDetachReason } from './session-errors.js'
export {
	AgentSessionDetachedError,
	SessionRefusedError,
	SessionsUnsupportedError,
} from './session-errors.js'
export type {
	KilledSession,
	SessionKind,
	SessionState,
	SessionSummary,
	StartedSession,
} from './session-summary.js'
export { AgentStreamSilentError } from './stream-silent-error.js'
export {
	AgentConnectionError,
	AgentDialFailedError,
	AgentFrameTooLargeError,
	AgentOpRefusedError,
	AgentPreauthFrameTooLargeError,
	AgentReadFileStreamUnsupportedError,
	AgentReadTimeoutError,
	AgentUnauthorizedError,
	AgentWriteFileTooLargeError,
} from './transport-errors.js'
export { PART_TEMP_BASENAME_MAX_CHARS } from './write-file-plan.js'
