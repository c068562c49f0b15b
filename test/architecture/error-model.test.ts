/**
 * The error model, for every error class in `src/` (the guest agent aside: its errors live in the
 * guest process and reach the host only as wire refusals): each is constructed with minimal
 * arguments — once per `reason` where the reason comes from a closed set — and must extend
 * `SandboxError`, carry `name` equal to its class name, a kebab-case `reason` and a boolean
 * `retryable`. The table is written by hand; two checks keep it complete: every error class an
 * entry point exports, and every class in `src/` that extends an error, is in it (or is one of the
 * internal plain errors listed below, which never reach a caller).
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'
import * as agentEntry from '../../src/agent-entry.js'
import {
	ACIArmError,
	ACIGroupNotReadyError,
	ACIOptionUnsupportedError,
	type ArmFailureReason,
} from '../../src/backends/container/aci/aci-errors.js'
import {
	ContainerEgressUnsupportedError,
	ContainerProviderClosedError,
	ContainerRuntimeCommandError,
	ContainerRuntimeUnavailableError,
	ContainerSandboxLayoutValidationError,
} from '../../src/backends/container/container-errors.js'
import {
	DockerEngineReplyError,
	DockerEngineRequestError,
	DockerEngineUnreachableError,
	DockerLimitsNotEnforcedError,
} from '../../src/backends/container/docker/docker-errors.js'
import {
	KubernetesAcquireError,
	type KubernetesAcquireFailureReason,
	KubernetesClaimUnboundError,
	KubernetesPodUnusableError,
	KubernetesTemplateInvalidError,
	ReadinessPollTimeout,
	ReadinessReadCutError,
} from '../../src/backends/kubernetes/acquire-errors.js'
import {
	KubernetesAlreadyGoneError,
	KubernetesApiError,
	type KubernetesApiErrorFields,
	type KubernetesApiFailureReason,
	KubernetesApiRequestTimeoutConfigError,
	KubernetesApiTimeoutError,
	KubernetesConflictError,
	KubernetesCredentialError,
	KubernetesPatchNotAppliedError,
} from '../../src/backends/kubernetes/api/api-errors.js'
import { KubernetesWatchFramingError } from '../../src/backends/kubernetes/api/watch-events.js'
import {
	KubernetesAgentAddressUnresolvableError,
	KubernetesAgentRetiringError,
	KubernetesAgentUnauthorizedError,
	KubernetesCreateOptionUnsupportedError,
	KubernetesPrivilegeProbeError,
	KubernetesSandboxDestroyedError,
	KubernetesSandboxGoneError,
} from '../../src/backends/kubernetes/kubernetes-sandbox-errors.js'
import {
	KubernetesEgressNarrowingUnsupportedError,
	KubernetesEgressPolicyConfigError,
	KubernetesEgressPolicyMismatchError,
	KubernetesEgressPolicyNotAppliedError,
	KubernetesEgressPolicyUnionError,
	KubernetesEgressProfileConfigError,
	KubernetesIngressPolicyError,
	KubernetesPodLabelNotObservedError,
	KubernetesPodLabelsRejectedError,
	KubernetesUnenforceableEgressPolicyError,
} from '../../src/backends/kubernetes/network/network-errors.js'
import {
	KubernetesAdmissionFenceMissingError,
	KubernetesAdmissionFenceUnreadableError,
	KubernetesNetworkPolicyHostError,
	KubernetesOwnerUidMissingError,
	KubernetesPerSandboxEgressConfigError,
	KubernetesWorkspacePerSandboxEgressConfigError,
} from '../../src/backends/kubernetes/network/per-sandbox-errors.js'
import {
	KubernetesFlushUnreachableError,
	KubernetesWorkspaceDiskError,
	KubernetesWorkspaceMismatchError,
	KubernetesWorkspacePreconditionError,
	KubernetesWorkspaceSuspendedError,
	KubernetesWorkspaceSuspendTimeoutError,
} from '../../src/backends/kubernetes/workspace/workspace-errors.js'
import {
	KubernetesWorkspaceGuestGoneError,
	KubernetesWorkspaceReplacedError,
} from '../../src/backends/kubernetes/workspace/workspace-guest-errors.js'
import * as localErrors from '../../src/backends/local/local-errors.js'
import {
	CheckpointSpaceExhaustedError,
	DefaultLimitsUnavailableError,
	DiskLimitUnavailableError,
} from '../../src/backends/machine/cgroups/limit-errors.js'
import * as machineErrors from '../../src/backends/machine/machine-errors.js'
import {
	LocalNetworkSetupError,
	LocalNetworkUnavailableError,
} from '../../src/backends/machine/network/network-errors.js'
import {
	FirecrackerApiError,
	MicroVMEgressUnsupportedError,
	MicroVMEntropyNotRenewedError,
	MicroVMImageMissingError,
	MicroVMProviderClosedError,
	MicroVMServiceUnavailableError,
	MicroVMSnapshotDamagedError,
	QemuMonitorError,
} from '../../src/backends/microvm/microvm-errors.js'
import {
	CliDependencyMissingError,
	CliPathNotFoundError,
	CliStdinTooLargeError,
	CliUsageError,
} from '../../src/cli/cli-errors.js'
import * as containerEntry from '../../src/container-entry.js'
import {
	CheckpointLimitError,
	CheckpointNotFoundError,
	CheckpointRestoreHookError,
	CheckpointUnsupportedError,
} from '../../src/contract/checkpoint.js'
import {
	FileWalkLimitError,
	SandboxArgumentError,
	SandboxBackendNotImplementedError,
	SandboxConfigError,
	SandboxDestroyedError,
	SandboxError,
	SandboxFileError,
	SandboxPathEscapeError,
} from '../../src/contract/errors.js'
import * as contractEntry from '../../src/contract-entry.js'
import { SandboxPrivilegeProbeError } from '../../src/exec-programs/privilege-probe.js'
import {
	FileWalkBraceLimitError,
	FileWalkExecError,
	FileWalkOptionError,
	FileWalkPatternError,
	type FileWalkPatternRefusal,
	FileWalkProtocolError,
	FileWalkRootError,
} from '../../src/exec-programs/walk/walk-errors.js'
import {
	ExecutionDetachedError,
	RemoteControlTimeoutError,
	RemoteResultIncompleteError,
} from '../../src/host/exec/exec-errors.js'
import { PortExposureListenError } from '../../src/host/ports/port-errors.js'
import {
	AgentReadFileStreamUnsupportedError,
	ExecutionAttachUnsupportedError,
	FlushUnsupportedError,
	GuestFeatureUnsupportedError,
	QuiesceUnsupportedError,
	SessionsUnsupportedError,
} from '../../src/host/refusals/guest-feature-errors.js'
import {
	AgentOpRefusedError,
	AgentUnauthorizedError,
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
	SessionRefusedError,
} from '../../src/host/refusals/refusal-errors.js'
import {
	SandboxRetiredError,
	SandboxTcpTargetRefusedError,
} from '../../src/host/sandbox/agent-sandbox-errors.js'
import {
	AgentSessionDetachedError,
	type SessionDetachReason,
} from '../../src/host/sessions/session-errors.js'
import {
	AgentConnectionError,
	AgentDialFailedError,
	AgentFrameTooLargeError,
	AgentListingTooLargeError,
	AgentPreauthFrameTooLargeError,
	AgentReadFileTooLargeError,
	AgentReadTimeoutError,
	AgentStreamSilentError,
	AgentWriteFileTooLargeError,
	ConnectTimeoutError,
	GuestDiedError,
	VsockHandshakeError,
} from '../../src/host/transport/transport-errors.js'
import * as root from '../../src/index.js'
import * as kubernetesEntry from '../../src/kubernetes-entry.js'
import * as localEntry from '../../src/local-entry.js'
import {
	ForeignSandboxError,
	McpHttpConfigError,
	McpKeepAliveUnsupportedError,
	UnknownSandboxError,
} from '../../src/mcp/mcp-errors.js'
import * as microvmEntry from '../../src/microvm-entry.js'
import {
	ConformanceAssertionError,
	ConformanceCaseTimeoutError,
} from '../../src/testing/conformance-errors.js'
import * as testingEntry from '../../src/testing/index.js'
import * as toolsEntry from '../../src/tools/index.js'
import {
	EditMatchAmbiguousError,
	EditMatchNotFoundError,
	ExecStdinUnavailableError,
	GrepPatternTimeoutError,
	ToolFileTooLargeError,
	ToolUnsupportedError,
	UnknownToolError,
} from '../../src/tools/tool-errors.js'
import * as wireFeatures from '../../src/wire/features.js'
import { type AgentFeature, FLUSH_FEATURE } from '../../src/wire/features.js'
import { AGENT_REFUSAL, parseRefusal } from '../../src/wire/refusals.js'

const KEBAB = /^[a-z0-9]+(-[a-z0-9]+)*$/

type ErrorClass = abstract new (...args: never[]) => Error

interface ErrorCase {
	readonly type: ErrorClass
	readonly make: () => Error
	/** When `name` is not the class name: the documented exception. */
	readonly name?: string
}

/**
 * Classes whose `name` is not their own, on purpose: the Kubernetes handle's destroyed refusal
 * keeps the contract's `SandboxDestroyedError`, which the conformance suite and callers match.
 */
const NAME_EXCEPTIONS: ReadonlyMap<ErrorClass, string> = new Map([
	[KubernetesSandboxDestroyedError, 'SandboxDestroyedError'],
])

/**
 * Plain errors that never reach a caller, and why. `FrameError` is the wire's (the wire imports
 * nothing): the agent answers it as a refusal and the host wraps it as the cause of a
 * `RemoteProtocolError` (`host/transport/frame-channel.ts`; the malformed-frame test in
 * `test/host/transport/agent-transport-discipline.test.ts`); `JsonShapeError` likewise, as a
 * `RemoteReplyBoundError`'s cause (`test/host/transport/hostile-replies.test.ts`). `BodyRefusal`
 * is the MCP HTTP server's answer to a request body past its bounds, sent as an HTTP status
 * (`test/mcp/mcp-http-clients.test.ts`). `CaseSkipped` is thrown and caught
 * inside one conformance case's `run`.
 */
const INTERNAL_PLAIN_ERRORS: readonly string[] = [
	'FrameError',
	'JsonShapeError',
	'BodyRefusal',
	'CaseSkipped',
	'TransitionRefusal',
	'TunnelRefusal',
]

const apiFields = (fields: Partial<KubernetesApiErrorFields> = {}): KubernetesApiErrorFields => ({
	verb: 'GET',
	path: '/api/v1/namespaces/x',
	transport: 'status',
	status: 404,
	retryable: false,
	...fields,
})

const probe = (reason: 'probe-failed' | 'privileged') =>
	new SandboxPrivilegeProbeError(reason, 'detail', {})

const ACQUIRE_REASONS: readonly KubernetesAcquireFailureReason[] = [
	'api-unreachable',
	'api-timeout',
	'forbidden',
	'claim-rejected',
	'capacity',
	'image-pull',
	'not-ready',
]
const API_KINDS: readonly Exclude<KubernetesApiFailureReason, 'connect-failed'>[] = [
	'gone',
	'conflict',
	'patch-test-failed',
	'patch-unapplicable',
	'invalid',
	'unauthorized',
	'forbidden',
	'throttled',
	'server-error',
	'other',
]
const PATTERN_REFUSALS: readonly FileWalkPatternRefusal[] = [
	'pattern-empty',
	'pattern-too-long',
	'pattern-absolute',
	'pattern-parent-segment',
	'plan-too-large',
]
const DETACH_REASONS: readonly SessionDetachReason[] = [
	'connection-lost',
	'superseded',
	'slow-reader',
	'closed',
]
/** Every feature a guest advertises: each gets a `<feature>-unsupported` reason. */
const FEATURES: readonly AgentFeature[] = Object.entries(wireFeatures)
	.filter(([key]) => key.endsWith('_FEATURE'))
	.map(([, value]) => value as AgentFeature)

const {
	BubblewrapUnavailableError,
	LocalKeepAliveUnavailableError,
	LocalProviderClosedError,
	LocalSandboxNotFoundError,
	LocalStateDirUnreachableError,
} = localErrors
const {
	CgroupLimitsUnavailableError,
	LocalEgressUnsupportedError,
	LocalHelperUnavailableError,
	LocalHostToolError,
	LocalPathOptionError,
	LocalSandboxCleanupError,
	LocalSandboxStartError,
	LocalSandboxUidsExhaustedError,
	LocalStateEntryUnsafeError,
	LocalWorkspaceBusyError,
	SeccompUnsupportedArchError,
} = machineErrors

const CASES: readonly ErrorCase[] = [
	// contract
	{ type: SandboxError, make: () => new SandboxError('m', 'some-reason') },
	{ type: SandboxDestroyedError, make: () => new SandboxDestroyedError('sb', 'exec') },
	{
		type: SandboxBackendNotImplementedError,
		make: () => new SandboxBackendNotImplementedError('x'),
	},
	{ type: SandboxConfigError, make: () => new SandboxConfigError('field', 'is wrong') },
	{ type: SandboxArgumentError, make: () => new SandboxArgumentError('exec', 'p', 'e', 'r') },
	{ type: SandboxPathEscapeError, make: () => new SandboxPathEscapeError('../x', 'readFile') },
	{ type: SandboxFileError, make: () => new SandboxFileError('p', 'readFile', 'ENOENT', 'gone') },
	{ type: FileWalkLimitError, make: () => new FileWalkLimitError(10) },
	{ type: CheckpointNotFoundError, make: () => new CheckpointNotFoundError('x') },
	{ type: CheckpointLimitError, make: () => new CheckpointLimitError(256) },
	{
		type: CheckpointRestoreHookError,
		make: () =>
			new CheckpointRestoreHookError(
				{
					checkpoint: {
						id: '0123456789abcdef',
						kind: 'filesystem',
						sandboxId: 's',
						createdAt: 1,
						bytes: 0,
						label: undefined,
					},
					operation: 'fork',
				},
				's2',
				new Error('hook'),
			),
	},
	{
		type: CheckpointUnsupportedError,
		make: () => new CheckpointUnsupportedError('checkpoint', 'memory', ['filesystem']),
	},
	// exec-programs
	{ type: SandboxPrivilegeProbeError, make: () => probe('probe-failed') },
	{ type: SandboxPrivilegeProbeError, make: () => probe('privileged') },
	{ type: FileWalkRootError, make: () => new FileWalkRootError('r', 'root-not-absolute') },
	{ type: FileWalkRootError, make: () => new FileWalkRootError('/r', 'root-is-symlink') },
	...PATTERN_REFUSALS.map((refusal) => ({
		type: FileWalkPatternError,
		make: () => new FileWalkPatternError(refusal, 3),
	})),
	{ type: FileWalkBraceLimitError, make: () => new FileWalkBraceLimitError(8) },
	{ type: FileWalkOptionError, make: () => new FileWalkOptionError('maxDepth', 'must be ≥ 0') },
	{ type: FileWalkProtocolError, make: () => new FileWalkProtocolError('missing-done', 'd') },
	...(['guest-error', 'timed-out', 'exit-code'] as const).map((reason) => ({
		type: FileWalkExecError,
		make: () => new FileWalkExecError(reason, 'detail'),
	})),
	// host: refusals
	{ type: AgentOpRefusedError, make: () => new AgentOpRefusedError('terminal', 'EACCES: no') },
	{ type: AgentUnauthorizedError, make: () => new AgentUnauthorizedError('healthz') },
	{ type: RemoteProtocolError, make: () => new RemoteProtocolError('bad reply') },
	{ type: RemoteByteCountError, make: () => new RemoteByteCountError('read-file', 'x', 1, 2) },
	{
		type: RemoteReplyBoundError,
		make: () => new RemoteReplyBoundError('healthz', 'depth', 8, 'too deep'),
	},
	{ type: RemoteCommandError, make: () => new RemoteCommandError('invalid_cwd') },
	{ type: RemoteExecutionRefusedError, make: () => new RemoteExecutionRefusedError('x') },
	{
		type: RemoteExecutionRefusedError,
		make: () => new RemoteExecutionRefusedError(AGENT_REFUSAL.execution_capacity),
	},
	{
		type: RemoteCancellationUnknownError,
		make: () => new RemoteCancellationUnknownError(undefined, 'retiring'),
	},
	{
		type: ExecutionNotAttachableError,
		make: () => new ExecutionNotAttachableError('exec_1', AGENT_REFUSAL.unknown_execution),
	},
	{
		type: ProcessInputRefusedError,
		make: () =>
			new ProcessInputRefusedError('exec_1', 'write', 'stdin-not-open', {
				guestCode: AGENT_REFUSAL.stdin_not_open,
			}),
	},
	{
		type: ExecutionCancelRefusedError,
		make: () => new ExecutionCancelRefusedError('exec_1', AGENT_REFUSAL.unknown_execution),
	},
	{
		type: SessionRefusedError,
		make: () => new SessionRefusedError('readSession', 's', AGENT_REFUSAL.session_capacity),
	},
	{ type: QuiesceUnconfirmedError, make: () => new QuiesceUnconfirmedError(7, 'pid 7 survived') },
	{ type: FlushUnconfirmedError, make: () => new FlushUnconfirmedError('sync exited 1') },
	{
		type: QuiesceUnconfirmedError,
		make: () => new QuiesceUnconfirmedError(undefined, 'in flight', 'suspend-already-in-flight'),
	},
	{
		type: FlushUnconfirmedError,
		make: () => new FlushUnconfirmedError('in flight', 'suspend-already-in-flight'),
	},
	// host: guest features
	...FEATURES.map((feature) => ({
		type: GuestFeatureUnsupportedError,
		make: () => new GuestFeatureUnsupportedError(feature, 'op'),
	})),
	{ type: SessionsUnsupportedError, make: () => new SessionsUnsupportedError('listSessions') },
	{
		type: ExecutionAttachUnsupportedError,
		make: () => new ExecutionAttachUnsupportedError('exec'),
	},
	{
		type: AgentReadFileStreamUnsupportedError,
		make: () => new AgentReadFileStreamUnsupportedError('readFile'),
	},
	{ type: QuiesceUnsupportedError, make: () => new QuiesceUnsupportedError() },
	{ type: FlushUnsupportedError, make: () => new FlushUnsupportedError('no sync') },
	// host: exec, sessions, sandbox
	{ type: RemoteControlTimeoutError, make: () => new RemoteControlTimeoutError('reserve', 2000) },
	{
		type: RemoteResultIncompleteError,
		make: () =>
			new RemoteResultIncompleteError('no result', { ok: true, state: 'cancelled', started: true }),
	},
	...(['detached', 'reattach-window-elapsed'] as const).map((why) => ({
		type: ExecutionDetachedError,
		make: () => new ExecutionDetachedError('exec_1', 0, why),
	})),
	...DETACH_REASONS.map((why) => ({
		type: AgentSessionDetachedError,
		make: () => new AgentSessionDetachedError('s', why, 0),
	})),
	{ type: SandboxRetiredError, make: () => new SandboxRetiredError('sb', 'exec') },
	{
		type: SandboxTcpTargetRefusedError,
		make: () => new SandboxTcpTargetRefusedError('10.0.0.1', 80, 'not loopback'),
	},
	{
		type: PortExposureListenError,
		make: () => new PortExposureListenError(8000, new Error('EMFILE')),
	},
	// host: transport
	{ type: AgentDialFailedError, make: () => new AgentDialFailedError('unix', 1, 5) },
	{
		type: AgentDialFailedError,
		make: () => new AgentDialFailedError('tcp', 1, 5, { permanent: true }),
	},
	{ type: ConnectTimeoutError, make: () => new ConnectTimeoutError(500) },
	{ type: VsockHandshakeError, make: () => new VsockHandshakeError('vsock handshake refused') },
	{ type: AgentFrameTooLargeError, make: () => new AgentFrameTooLargeError('too big', 9, 8) },
	{ type: AgentPreauthFrameTooLargeError, make: () => new AgentPreauthFrameTooLargeError(9, 8) },
	{ type: AgentWriteFileTooLargeError, make: () => new AgentWriteFileTooLargeError(9, 8) },
	{ type: AgentReadFileTooLargeError, make: () => new AgentReadFileTooLargeError(9, 8) },
	{ type: AgentListingTooLargeError, make: () => new AgentListingTooLargeError('/w', 8, 1) },
	{ type: AgentReadTimeoutError, make: () => new AgentReadTimeoutError('read-file', 100) },
	{ type: AgentConnectionError, make: () => new AgentConnectionError('exec') },
	{ type: AgentStreamSilentError, make: () => new AgentStreamSilentError('terminal', 100) },
	{ type: GuestDiedError, make: () => new GuestDiedError({ exitCode: null, signal: 'SIGKILL' }) },
	// the Kubernetes tier
	...ACQUIRE_REASONS.map((reason) => ({
		type: KubernetesAcquireError,
		make: () => new KubernetesAcquireError(reason),
	})),
	{ type: ReadinessPollTimeout, make: () => new ReadinessPollTimeout('claim', 1000) },
	{ type: ReadinessReadCutError, make: () => new ReadinessReadCutError('claim') },
	{ type: KubernetesClaimUnboundError, make: () => new KubernetesClaimUnboundError('c') },
	{ type: KubernetesPodUnusableError, make: () => new KubernetesPodUnusableError('p', 'no uid') },
	{
		type: KubernetesTemplateInvalidError,
		make: () => new KubernetesTemplateInvalidError('t', 'd'),
	},
	{
		type: KubernetesApiRequestTimeoutConfigError,
		make: () => new KubernetesApiRequestTimeoutConfigError(5),
	},
	{ type: KubernetesApiTimeoutError, make: () => new KubernetesApiTimeoutError('GET', '/x', 1000) },
	{ type: KubernetesApiError, make: () => new KubernetesApiError(apiFields()) },
	{
		type: KubernetesApiError,
		make: () => new KubernetesApiError(apiFields({ transport: 'connect', retryable: true })),
	},
	...API_KINDS.map((kind) => ({
		type: KubernetesApiError,
		make: () => new KubernetesApiError(apiFields({ kind, statusReason: 'NotFound' })),
	})),
	{
		type: KubernetesAlreadyGoneError,
		make: () => new KubernetesAlreadyGoneError(apiFields({ kind: 'gone' })),
	},
	{
		type: KubernetesConflictError,
		make: () => new KubernetesConflictError(apiFields({ kind: 'conflict' })),
	},
	{
		type: KubernetesPatchNotAppliedError,
		make: () => new KubernetesPatchNotAppliedError(apiFields({ kind: 'patch-test-failed' })),
	},
	{ type: KubernetesCredentialError, make: () => new KubernetesCredentialError('kubeconfig', 'd') },
	{ type: KubernetesWatchFramingError, make: () => new KubernetesWatchFramingError('not-json') },
	{
		type: KubernetesSandboxDestroyedError,
		make: () => new KubernetesSandboxDestroyedError('sb', 'exec'),
	},
	{ type: KubernetesSandboxGoneError, make: () => new KubernetesSandboxGoneError('sb', 'exec') },
	{
		type: KubernetesWorkspaceDiskError,
		make: () => new KubernetesWorkspaceDiskError('t', 'not-block', { claimName: 'disk' }),
	},
	{
		type: KubernetesWorkspaceMismatchError,
		make: () => new KubernetesWorkspaceMismatchError('ws', 'template-label', 'a', 'b'),
	},
	{
		type: KubernetesWorkspaceSuspendTimeoutError,
		make: () => new KubernetesWorkspaceSuspendTimeoutError('ws', 'ws', 1000),
	},
	{
		type: KubernetesWorkspaceSuspendedError,
		make: () => new KubernetesWorkspaceSuspendedError('ws', 'exec'),
	},
	{
		type: KubernetesWorkspaceSuspendedError,
		make: () =>
			new KubernetesWorkspaceSuspendedError('ws', 'exec', {
				noticedBy: 'transport',
				cause: new Error('connect ECONNREFUSED'),
			}),
	},
	{
		type: KubernetesWorkspacePreconditionError,
		make: () =>
			new KubernetesWorkspacePreconditionError({
				operation: 'suspend',
				workspaceId: 'ws',
				sandboxName: 'namzu-ws-ws',
				epoch: 3,
				storedEpoch: 7,
			}),
	},
	{
		type: KubernetesFlushUnreachableError,
		make: () => new KubernetesFlushUnreachableError('ws', { cause: new Error('x') }),
	},
	{
		type: KubernetesAgentUnauthorizedError,
		make: () => new KubernetesAgentUnauthorizedError('sb', 'exec'),
	},
	{
		type: KubernetesAgentRetiringError,
		make: () => new KubernetesAgentRetiringError('sb', 'exec', 'task'),
	},
	{
		type: KubernetesAgentRetiringError,
		make: () => new KubernetesAgentRetiringError('ws', 'readFile', 'workspace'),
	},
	{
		type: KubernetesWorkspaceReplacedError,
		make: () => new KubernetesWorkspaceReplacedError('namzu-ws-a', 'exec', 'uid-1', 'uid-2'),
	},
	{
		type: KubernetesWorkspaceReplacedError,
		make: () => new KubernetesWorkspaceReplacedError('namzu-ws-a', 'readFile', 'uid-1', undefined),
	},
	{
		type: KubernetesWorkspaceGuestGoneError,
		make: () =>
			new KubernetesWorkspaceGuestGoneError(
				new RemoteCancellationUnknownError('exec_1', 'no acknowledgement'),
				'pod-replaced',
				{ podUid: 'pod-a', guestBootId: 'boot-a' },
				{ podUid: 'pod-b' },
			),
	},
	{
		type: KubernetesAgentAddressUnresolvableError,
		make: () => new KubernetesAgentAddressUnresolvableError('svc.ns', 'ENOTFOUND'),
	},
	{
		type: KubernetesPrivilegeProbeError,
		make: () => new KubernetesPrivilegeProbeError(probe('privileged'), 'sb'),
	},
	{
		type: KubernetesPrivilegeProbeError,
		make: () => new KubernetesPrivilegeProbeError(probe('probe-failed'), 'sb'),
	},
	{
		type: KubernetesUnenforceableEgressPolicyError,
		make: () => new KubernetesUnenforceableEgressPolicyError('static'),
	},
	{
		type: KubernetesEgressPolicyConfigError,
		make: () => new KubernetesEgressPolicyConfigError('policy.exceptCidrs[0]', 'not a CIDR'),
	},
	{
		type: KubernetesEgressNarrowingUnsupportedError,
		make: () =>
			new KubernetesEgressNarrowingUnsupportedError('ciliumNarrowing.ports', 'core', 'deny-all'),
	},
	{
		type: KubernetesEgressProfileConfigError,
		make: () => new KubernetesEgressProfileConfigError('profile', 'not a label'),
	},
	{
		type: KubernetesEgressPolicyNotAppliedError,
		make: () => new KubernetesEgressPolicyNotAppliedError('NetworkPolicy', 'task-egress', 'ns'),
	},
	{
		type: KubernetesEgressPolicyMismatchError,
		make: () =>
			new KubernetesEgressPolicyMismatchError({
				policyKind: 'NetworkPolicy',
				policyName: 'task-egress',
				field: 'spec.egress',
				expected: '[]',
				actual: undefined,
			}),
	},
	{
		type: KubernetesEgressPolicyUnionError,
		make: () =>
			new KubernetesEgressPolicyUnionError({
				refusal: 'policy-widens-egress',
				namespace: 'ns',
				podLabels: {},
				examined: [],
				unread: [],
			}),
	},
	{
		type: KubernetesIngressPolicyError,
		make: () =>
			new KubernetesIngressPolicyError({
				refusal: 'no-ingress-policy',
				namespace: 'ns',
				podLabels: {},
				port: 1024,
				examined: [],
				unread: [],
			}),
	},
	{
		type: KubernetesPodLabelNotObservedError,
		make: () => new KubernetesPodLabelNotObservedError('pod', 'k', 'v', undefined),
	},
	{
		type: KubernetesPodLabelsRejectedError,
		make: () => new KubernetesPodLabelsRejectedError({ k: 'v' }, 'k'),
	},
	{
		type: KubernetesCreateOptionUnsupportedError,
		make: () => new KubernetesCreateOptionUnsupportedError('memoryLimitMb'),
	},
	{
		type: KubernetesPerSandboxEgressConfigError,
		make: () => new KubernetesPerSandboxEgressConfigError('perSandbox.engine', 'core'),
	},
	{
		type: KubernetesNetworkPolicyHostError,
		make: () =>
			new KubernetesNetworkPolicyHostError({
				host: 'a:1',
				index: 0,
				problem: 'port',
				field: 'allowedHosts[0]',
				detail: 'has a port',
			}),
	},
	{
		type: KubernetesAdmissionFenceMissingError,
		make: () => new KubernetesAdmissionFenceMissingError('ValidatingAdmissionPolicy', 'fence'),
	},
	{
		type: KubernetesAdmissionFenceUnreadableError,
		make: () =>
			new KubernetesAdmissionFenceUnreadableError('ValidatingAdmissionPolicy', 'fence', 403),
	},
	{
		type: KubernetesOwnerUidMissingError,
		make: () => new KubernetesOwnerUidMissingError('sb', 'claim'),
	},
	{
		type: KubernetesWorkspacePerSandboxEgressConfigError,
		make: () => new KubernetesWorkspacePerSandboxEgressConfigError(),
	},
	// the local tier
	{
		type: BubblewrapUnavailableError,
		make: () => new BubblewrapUnavailableError('/usr/bin/bwrap', 'missing'),
	},
	{ type: LocalEgressUnsupportedError, make: () => new LocalEgressUnsupportedError('allow-list') },
	{
		type: CgroupLimitsUnavailableError,
		make: () => new CgroupLimitsUnavailableError(['memory'], 'd'),
	},
	{
		type: LocalSandboxStartError,
		make: () => new LocalSandboxStartError('sb', 'exited', { stderrTail: '' }),
	},
	{ type: LocalProviderClosedError, make: () => new LocalProviderClosedError() },
	{ type: LocalSandboxCleanupError, make: () => new LocalSandboxCleanupError(['/tmp/x']) },
	...(['invalid-id', 'missing', 'expired', 'dead'] as const).map((state) => ({
		type: LocalSandboxNotFoundError,
		make: () => new LocalSandboxNotFoundError('0123456789ab', state),
	})),
	{
		type: LocalKeepAliveUnavailableError,
		make: () => new LocalKeepAliveUnavailableError('/usr/bin/timeout'),
	},
	{
		type: LocalPathOptionError,
		make: () => new LocalPathOptionError('readOnlyPaths[0]', 'root', '/', 'd'),
	},
	{
		type: LocalSandboxUidsExhaustedError,
		make: () => new LocalSandboxUidsExhaustedError(100000, 10),
	},
	{
		type: LocalStateDirUnreachableError,
		make: () => new LocalStateDirUnreachableError('/s', '/s'),
	},
	{ type: LocalStateEntryUnsafeError, make: () => new LocalStateEntryUnsafeError('/s/x', 'd') },
	{ type: LocalWorkspaceBusyError, make: () => new LocalWorkspaceBusyError('/w', 'd') },
	{
		type: SeccompUnsupportedArchError,
		make: () => new SeccompUnsupportedArchError('riscv64', ['x64', 'arm64']),
	},
	{
		type: LocalHelperUnavailableError,
		make: () => new LocalHelperUnavailableError('/usr/bin/setpriv', 'p'),
	},
	{
		type: LocalHostToolError,
		make: () =>
			new LocalHostToolError('/usr/bin/chown', ['-R'], { code: 1, signal: null, stderr: 'x' }),
	},
	{
		type: LocalNetworkUnavailableError,
		make: () =>
			new LocalNetworkUnavailableError([
				{
					tool: 'slirp4netns',
					path: '/usr/bin/slirp4netns',
					fix: 'apt-get install -y slirp4netns',
				},
			]),
	},
	...(['namespace', 'slirp4netns', 'firewall'] as const).map((step) => ({
		type: LocalNetworkSetupError,
		make: () => new LocalNetworkSetupError('sb', step, 'detail', ''),
	})),
	{
		type: DefaultLimitsUnavailableError,
		make: () => new DefaultLimitsUnavailableError(['memory'], 'd'),
	},
	...(['caller-workspace', 'not-root', 'mkfs-missing', 'setup-failed'] as const).map((refusal) => ({
		type: DiskLimitUnavailableError,
		make: () => new DiskLimitUnavailableError(refusal, 64, 'detail'),
	})),
	...(['checkpoint', 'rollback', 'fork'] as const).map((operation) => ({
		type: CheckpointSpaceExhaustedError,
		make: () => new CheckpointSpaceExhaustedError(operation, '/state/namzu-cow/mnt'),
	})),
	// backends/container
	{
		type: ContainerSandboxLayoutValidationError,
		make: () => new ContainerSandboxLayoutValidationError(['layout.outputs is required']),
	},
	{
		type: ContainerRuntimeUnavailableError,
		make: () => new ContainerRuntimeUnavailableError('crun', '/usr/bin/crun', 'detail', 'fix'),
	},
	{
		type: ContainerRuntimeCommandError,
		make: () => new ContainerRuntimeCommandError('runc', 'create', { exitCode: 1, stderrTail: '' }),
	},
	{
		type: ContainerEgressUnsupportedError,
		make: () => new ContainerEgressUnsupportedError('allow-all', 'runsc', 'its own network stack'),
	},
	{ type: ContainerProviderClosedError, make: () => new ContainerProviderClosedError() },
	{
		type: DockerEngineUnreachableError,
		make: () => new DockerEngineUnreachableError('/run/docker.sock', 'ENOENT'),
	},
	...[400, 404, 409, 500, 403].map((status) => ({
		type: DockerEngineRequestError,
		make: () => new DockerEngineRequestError('POST', '/containers/create', status, 'no'),
	})),
	{
		type: DockerLimitsNotEnforcedError,
		make: () => new DockerLimitsNotEnforcedError(['Memory', 'PidsLimit']),
	},
	...(['engine-reply-too-large', 'engine-reply-malformed'] as const).map((reason) => ({
		type: DockerEngineReplyError,
		make: () => new DockerEngineReplyError(reason, 'GET', '/containers/json', 1024),
	})),
	...(
		[
			'token-unavailable',
			'auth',
			'forbidden',
			'not-found',
			'conflict',
			'throttled',
			'quota',
			'pool-empty',
			'rejected',
			'server',
			'unreachable',
			'protocol',
		] satisfies ArmFailureReason[]
	).map((reason) => ({
		type: ACIArmError,
		make: () =>
			new ACIArmError({ reason, operation: 'claim', method: 'PUT', path: '/subscriptions/s' }),
	})),
	...(
		['provisioning-failed', 'ready-timeout', 'agent-unreachable', 'agent-token-refused'] as const
	).map((reason) => ({
		type: ACIGroupNotReadyError,
		make: () => new ACIGroupNotReadyError(reason, 'namzu-task-x', 'detail', { deleted: true }),
	})),
	{
		type: ACIOptionUnsupportedError,
		make: () => new ACIOptionUnsupportedError('env', 'detail'),
	},
	// microvm
	{
		type: MicroVMImageMissingError,
		make: () => new MicroVMImageMissingError('/cache/vm-x', '/cache/vm-x/vmlinuz'),
	},
	{
		type: MicroVMEgressUnsupportedError,
		make: () => new MicroVMEgressUnsupportedError('allow-all'),
	},
	{
		type: MicroVMServiceUnavailableError,
		make: () => new MicroVMServiceUnavailableError('firecracker', 'no binary'),
	},
	{ type: MicroVMProviderClosedError, make: () => new MicroVMProviderClosedError() },
	{ type: MicroVMEntropyNotRenewedError, make: () => new MicroVMEntropyNotRenewedError() },
	{
		type: MicroVMSnapshotDamagedError,
		make: () => new MicroVMSnapshotDamagedError('/tmp/namzu-snapshot-cache/0123'),
	},
	{
		type: FirecrackerApiError,
		make: () => new FirecrackerApiError({ method: 'PUT', path: '/boot-source' }, 400, 'bad kernel'),
	},
	{ type: QemuMonitorError, make: () => new QemuMonitorError('migrate', 'failed') },
	// tools, mcp
	{ type: EditMatchNotFoundError, make: () => new EditMatchNotFoundError('a.txt') },
	{ type: EditMatchAmbiguousError, make: () => new EditMatchAmbiguousError('a.txt', 2) },
	{ type: ToolFileTooLargeError, make: () => new ToolFileTooLargeError('grep', 'a', 1) },
	{ type: ToolUnsupportedError, make: () => new ToolUnsupportedError('glob', 'walkFiles') },
	{ type: UnknownToolError, make: () => new UnknownToolError('x') },
	{ type: ExecStdinUnavailableError, make: () => new ExecStdinUnavailableError('exec-1') },
	{ type: GrepPatternTimeoutError, make: () => new GrepPatternTimeoutError(10) },
	{ type: UnknownSandboxError, make: () => new UnknownSandboxError('sbx') },
	{ type: ForeignSandboxError, make: () => new ForeignSandboxError('sbx') },
	{ type: McpHttpConfigError, make: () => new McpHttpConfigError('--host', 'm') },
	{
		type: McpKeepAliveUnsupportedError,
		make: () => new McpKeepAliveUnsupportedError('kubernetes'),
	},
	// cli, testing
	{ type: CliUsageError, make: () => new CliUsageError('unknown command: x') },
	{ type: CliDependencyMissingError, make: () => new CliDependencyMissingError('mcp', 'x') },
	{ type: CliStdinTooLargeError, make: () => new CliStdinTooLargeError(1024) },
	{ type: CliPathNotFoundError, make: () => new CliPathNotFoundError('a.txt', 'sandbox') },
	{ type: ConformanceAssertionError, make: () => new ConformanceAssertionError('toBe', 'm') },
	{ type: ConformanceCaseTimeoutError, make: () => new ConformanceCaseTimeoutError('t', 10) },
]

describe('the error model', () => {
	it.each(
		CASES.map((entry) => {
			const error = entry.make()
			const reason = (error as { reason?: unknown }).reason
			return { ...entry, error, label: `${entry.type.name} (${String(reason)})` }
		}),
	)(
		'$label extends SandboxError with its name, a kebab-case reason and a boolean retryable',
		({ type, error }) => {
			expect(error).toBeInstanceOf(type)
			expect(error).toBeInstanceOf(SandboxError)
			expect(error.name).toBe(NAME_EXCEPTIONS.get(type) ?? type.name)
			const { reason, retryable } = error as SandboxError
			expect(reason).toMatch(KEBAB)
			expect(typeof retryable).toBe('boolean')
			expect(error.message).not.toBe('')
		},
	)

	it('keeps the guest code and the Status reason out of reason', () => {
		expect(new QuiesceUnconfirmedError(7, 'm')).toMatchObject({
			reason: 'quiesce-unconfirmed',
			guestCode: 'quiesce_unconfirmed',
		})
		expect(new FlushUnconfirmedError('m')).toMatchObject({
			reason: 'flush-unconfirmed',
			guestCode: 'flush_unconfirmed',
		})
		// The one snake-case reason a spec pins travels beside the kebab-case one.
		expect(new FlushUnconfirmedError('m', 'suspend-already-in-flight')).toMatchObject({
			reason: 'suspend-already-in-flight',
			specReason: 'suspend_already_in_flight',
		})
		expect(new QuiesceUnconfirmedError(7, 'm').specReason).toBeUndefined()
		const refusal = parseRefusal(AGENT_REFUSAL.flush_unsupported_platform)
		expect(
			new FlushUnsupportedError(
				'm',
				refusal.known === undefined ? {} : { guestCode: refusal.known },
			),
		).toMatchObject({
			reason: `${FLUSH_FEATURE}-unsupported`,
			guestCode: 'flush_unsupported_platform',
		})
		expect(
			new KubernetesApiError(apiFields({ kind: 'gone', statusReason: 'NotFound' })),
		).toMatchObject({
			reason: 'gone',
			statusReason: 'NotFound',
		})
	})

	const covered = new Set<unknown>(CASES.map((entry) => entry.type))

	it.each([
		['@namzu/sandbox', root],
		['@namzu/sandbox/agent', agentEntry],
		['@namzu/sandbox/contract', contractEntry],
		['@namzu/sandbox/local', localEntry],
		['@namzu/sandbox/container', containerEntry],
		['@namzu/sandbox/microvm', microvmEntry],
		['@namzu/sandbox/kubernetes', kubernetesEntry],
		['@namzu/sandbox/testing', testingEntry],
		['@namzu/sandbox/tools', toolsEntry],
	] as const)('covers every error class %s exports', (_entry, module) => {
		const missing = Object.entries(module)
			.filter(([, value]) => typeof value === 'function' && value.prototype instanceof Error)
			.filter(([, value]) => !covered.has(value))
			.map(([name]) => name)
		expect(missing).toEqual([])
	})

	it('covers every class in src/ that extends an error, or lists it as internal and plain', () => {
		const src = join(import.meta.dirname, '..', '..', 'src')
		const files = sourceFiles(src).filter((file) => !relative(src, file).startsWith('agent/'))
		const extended = files.flatMap((file) =>
			[...readFileSync(file, 'utf8').matchAll(/\bclass (\w+) extends (\w+)/g)].map(
				([, name, base]) => ({ name: name as string, base: base as string }),
			),
		)
		const errors = new Set(['Error', 'RangeError', 'TypeError'])
		for (let grew = true; grew; ) {
			grew = false
			for (const { name, base } of extended) {
				if (errors.has(base) && !errors.has(name)) {
					errors.add(name)
					grew = true
				}
			}
		}
		const tableNames = new Set(CASES.map((entry) => entry.type.name))
		const unlisted = extended
			.map(({ name }) => name)
			.filter((name) => errors.has(name))
			.filter((name) => !tableNames.has(name) && !INTERNAL_PLAIN_ERRORS.includes(name))
		expect(unlisted).toEqual([])
		for (const name of INTERNAL_PLAIN_ERRORS) expect(errors.has(name)).toBe(true)
	})
})

function sourceFiles(dir: string): string[] {
	return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
		const path = join(dir, entry.name)
		if (entry.isDirectory()) return sourceFiles(path)
		return entry.name.endsWith('.ts') ? [path] : []
	})
}
