/**
 * `@namzu/sandbox/agent`: what a tier of your own is built from. The guest agent is one file
 * (`agentBundlePath()`) that runs on a plain `node` inside any guest; start it there, give the host
 * a handle to reach it (`unix`, `vsock` or token `tcp`), prove the guest deprivileged
 * (`probeSandboxPrivileges`), and `createAgentSandbox` serves the whole `Sandbox` contract over it
 * through `AgentTransport`. `walkFilesViaExec` gives `walkFiles` to any sandbox that can `exec`
 * node. The errors these throw are exported from the package root; the refusal code table
 * (`AGENT_REFUSAL`, `parseRefusal`, `WireRefusal`) is here, for reading what `AgentTransport`
 * answers by code. Pinned by `test/package/entry-points.test.ts`.
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
	type RemoteExecutionControllerOptions,
	type ReservedGuest,
	type ResolvedAgentTransportOptions,
	type SandboxAgentHandle,
	type SandboxAgentHandleKind,
} from './host/index.js'
export {
	AGENT_REFUSAL,
	AGENT_REFUSAL_CODES,
	type AgentRefusalCode,
	type AttachExecutionRequest,
	type ExecResultEvent,
	type ExecuteRequest,
	type ExecutionState,
	type ExecutionTerminalState,
	isAgentRefusalCode,
	parseRefusal,
	type TcpConnectRequest,
	type TerminalRequest,
	type WireRefusal,
} from './wire/index.js'
