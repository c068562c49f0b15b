/**
 * `@namzu/sandbox/agent`: what a tier of your own is built from. The guest agent is one file
 * (`agentBundlePath()`) that runs on a plain `node` inside any guest; start it there, give the host
 * a handle to reach it (`unix`, `vsock` or token `tcp`), prove the guest deprivileged
 * (`probeSandboxPrivileges`), and `createAgentSandbox` serves the whole `Sandbox` contract over it
 * through `AgentTransport`. `walkFilesViaExec` gives `walkFiles` to any sandbox that can `exec`
 * node. The errors these throw are on `@namzu/sandbox/contract`; the op table (`AGENT_OP`, whose
 * values `AgentTransport` takes as `AgentOp`) and the refusal code table
 * (`AGENT_REFUSAL`, `parseRefusal`, `WireRefusal`) are here, for reading what `AgentTransport`
 * answers by code, with the guest's other wire names (protocol version, feature names, reply
 * shapes). `RemoteExecutionController` and `walkFilesViaExec` are on the root as well. Pinned by `test/package/entry-points.test.ts`.
 */

export {
	assertDeprivileged,
	PRIVILEGE_PROBE_MAX_TIMEOUT_MS,
	type PrivilegeProbeFailure,
	type PrivilegeProbeOptions,
	type PrivilegeProbeTarget,
	type ProcStatusPrivileges,
	parseProcStatusPrivileges,
	privilegeViolations,
	probeSandboxPrivileges,
	type SandboxFileWalkExec,
	SandboxPrivilegeProbeError,
	walkFilesViaExec,
} from './exec-programs/index.js'
export {
	type AgentDialAttemptEvent,
	type AgentDialEvent,
	type AgentHealth,
	type AgentRequestOptions,
	AgentSandbox,
	type AgentSandboxOptions,
	type AgentTcpConnection,
	type AgentTerminalSession,
	AgentTransport,
	type AgentTransportOptions,
	agentBundlePath,
	type ChannelItem,
	createAgentSandbox,
	DEFAULT_AGENT_TRANSPORT_OPTIONS,
	describeAgentHandle,
	type EgressDecisionSource,
	ExecOutputBudget,
	type FrameChannel,
	GuestLiveness,
	REMOTE_EXECUTION_PROTOCOL_VERSION,
	type RemoteExecuteRequest,
	type RemoteExecutionAdapter,
	RemoteExecutionController,
	type RemoteExecutionControllerOptions,
	type RemoteExecutionTiming,
	type RemoteTerminalMetadata,
	type ReplyBound,
	type ReservedGuest,
	type ResolvedAgentTransportOptions,
	type SandboxAgentHandle,
	type SandboxAgentHandleKind,
	VsockAgentTransport,
	type VsockTransportOptions,
} from './host/index.js'
export {
	AGENT_OP,
	AGENT_PROTOCOL_VERSION,
	AGENT_REFUSAL,
	AGENT_REFUSAL_CODES,
	type AgentFeature,
	type AgentOp,
	type AgentRefusalCode,
	type AttachExecutionRequest,
	BINARY_FRAMES_FEATURE,
	type CancelExecutionReply,
	EXECUTE_RESERVES_FEATURE,
	EXECUTION_ATTACH_FEATURE,
	EXECUTION_INPUT_FEATURE,
	type ExecResultEvent,
	type ExecuteRequest,
	type ExecutionState,
	type ExecutionTerminalMetadata,
	type ExecutionTerminalState,
	FILE_VERBS_FEATURE,
	type FlushReply,
	GUEST_BOOT_ID_FEATURE,
	isAgentRefusalCode,
	LIST_FILES_FEATURE,
	LIST_FILES_STREAM_FEATURE,
	parseRefusal,
	type QuiesceReply,
	RELEASE_LISTENER_FEATURE,
	RESTORED_FEATURE,
	type SessionSummaryWire,
	type TcpConnectRequest,
	type TerminalRequest,
	WATCH_FEATURE,
	type WireRefusal,
} from './wire/index.js'
