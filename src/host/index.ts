// The host's public names, from which the package entries choose: `src/contract-entry.ts`
// (`@namzu/sandbox/contract`) takes the errors and the option and result types a caller of a
// sandbox meets, the root the few most callers need; `src/agent-entry.ts` (`@namzu/sandbox/agent`)
// takes the transport, the handles and the `AgentSandbox` a tier is built from. Everything else in
// the host is internal.

export type { EgressCredential } from './egress/egress-credentials.js'
export type { EgressDecision, EgressLayer } from './egress/egress-decision.js'
export { DEFAULT_SPAWN_TIMEOUT_MS } from './exec/background-process.js'
export {
	type AttachExecutionOptions,
	type CancelExecutionOptions,
	DEFAULT_REATTACH_WINDOW_MS,
	type DetachableExecOptions,
} from './exec/detachable-exec-options.js'
export {
	ExecutionDetachedError,
	type ExecutionDetachReason,
	RemoteControlTimeoutError,
	RemoteResultIncompleteError,
} from './exec/exec-errors.js'
export type { AgentExecOptions } from './exec/exec-options.js'
export { DEFAULT_EXEC_OUTPUT_BUDGET_BYTES, ExecOutputBudget } from './exec/exec-output-budget.js'
export type { RemoteExecutionTiming } from './exec/execution-timing.js'
export {
	type RemoteExecuteRequest,
	type RemoteExecutionAdapter,
	RemoteExecutionController,
	type RemoteExecutionControllerOptions,
} from './exec/remote-execution-controller.js'
export type { RemoteTerminalMetadata } from './exec/remote-execution-messages.js'
export type {
	FlushOptions,
	FlushReport,
	QuiesceOptions,
	QuiesceReport,
} from './lifecycle/agent-lifecycle-ops.js'
export { PortExposureListenError } from './ports/port-errors.js'
export {
	AgentReadFileStreamUnsupportedError,
	ExecutionAttachUnsupportedError,
	FlushUnsupportedError,
	GuestFeatureUnsupportedError,
	QuiesceUnsupportedError,
	SessionsUnsupportedError,
} from './refusals/guest-feature-errors.js'
export {
	AgentOpRefusedError,
	AgentUnauthorizedError,
	type AttachRefusal,
	ExecutionCancelRefusedError,
	ExecutionNotAttachableError,
	FlushUnconfirmedError,
	ProcessInputRefusedError,
	QuiesceUnconfirmedError,
	RemoteByteCountError,
	RemoteCancellationUnknownError,
	RemoteCommandError,
	RemoteExecutionRefusedError,
	RemoteProtocolError,
	RemoteReplyBoundError,
	type ReplyBound,
	SessionRefusedError,
} from './refusals/refusal-errors.js'
export { agentBundlePath } from './sandbox/agent-bundle-path.js'
export {
	AgentSandbox,
	type AgentSandboxOptions,
	createAgentSandbox,
} from './sandbox/agent-sandbox.js'
export {
	SandboxRetiredError,
	SandboxTcpTargetRefusedError,
} from './sandbox/agent-sandbox-errors.js'
export type { EgressDecisionSource } from './sandbox/sandbox-event-log.js'
export { VsockAgentTransport, type VsockTransportOptions } from './sandbox/vsock-agent-transport.js'
export type { SessionTerminal } from './sessions/agent-session-terminal.js'
export type {
	AttachTerminalOptions,
	KillSessionOptions,
	ListSessionsOptions,
	PersistentTerminalOptions,
	ReadSessionOptions,
	StartDetachedOptions,
} from './sessions/agent-sessions.js'
export { AgentSessionDetachedError, type SessionDetachReason } from './sessions/session-errors.js'
export type {
	KilledSession,
	SessionKind,
	SessionState,
	SessionSummary,
	StartedSession,
} from './sessions/session-summary.js'
export {
	describeAgentHandle,
	type SandboxAgentHandle,
	type SandboxAgentHandleKind,
} from './transport/agent-handle.js'
export type { AgentTcpConnection } from './transport/agent-tcp-connection.js'
export type { AgentTerminalSession } from './transport/agent-terminal-session.js'
export {
	type AgentRequestOptions,
	AgentTransport,
	type ReservedGuest,
} from './transport/agent-transport.js'
export {
	type AgentDialAttemptEvent,
	type AgentDialEvent,
	type AgentTransportOptions,
	DEFAULT_AGENT_TRANSPORT_OPTIONS,
	DEFAULT_MAX_READ_FILE_BYTES,
	DEFAULT_MAX_WRITE_FILE_BYTES,
	DEFAULT_SESSION_READ_MAX_BYTES,
	GUEST_FRAME_LIMIT_BYTES,
	REMOTE_EXECUTION_PROTOCOL_VERSION,
	type ResolvedAgentTransportOptions,
	TCP_PREAUTH_FRAME_LIMIT_BYTES,
} from './transport/agent-transport-options.js'
export type { ChannelItem, FrameChannel } from './transport/frame-channel.js'
export { GuestLiveness } from './transport/guest-liveness.js'
export type { AgentHealth } from './transport/healthz-reply.js'
export {
	AgentConnectionError,
	AgentDialFailedError,
	AgentFrameTooLargeError,
	AgentListingTooLargeError,
	AgentPreauthFrameTooLargeError,
	AgentReadFileTooLargeError,
	AgentReadTimeoutError,
	AgentStreamSilentError,
	AgentWriteFileTooLargeError,
	GuestDiedError,
	type GuestExit,
} from './transport/transport-errors.js'
