/**
 * What the package root exports, checked by the compiler: each class is there and is a
 * `SandboxError`, each constant carries its wire value as its type, each type has the shape the
 * spec names. `vitest --typecheck` runs this file (and `tsc` covers it); nothing here executes.
 * The exact list of root names is pinned by `entry-points.test.ts`.
 */
import { describe, expectTypeOf, it } from 'vitest'
import type * as agent from '../../src/agent-entry.js'
import type * as contract from '../../src/contract-entry.js'
import type * as root from '../../src/index.js'
import type * as kubernetes from '../../src/kubernetes-entry.js'
import type * as local from '../../src/local-entry.js'

type Instance<T> = T extends abstract new (...args: never[]) => infer I ? I : never

describe('package root: detachable executions', () => {
	it('exports the execution errors, each a SandboxError', () => {
		expectTypeOf<Instance<typeof contract.ExecutionDetachedError>>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof contract.ExecutionNotAttachableError>
		>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof contract.ExecutionAttachUnsupportedError>
		>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof contract.ExecutionCancelRefusedError>
		>().toExtend<root.SandboxError>()
	})

	it('exports the feature names, the default reattach window and the option types', () => {
		expectTypeOf<typeof agent.EXECUTION_ATTACH_FEATURE>().toEqualTypeOf<'execution-attach'>()
		expectTypeOf<typeof agent.GUEST_BOOT_ID_FEATURE>().toEqualTypeOf<'guest-boot-id'>()
		expectTypeOf<typeof contract.DEFAULT_REATTACH_WINDOW_MS>().toEqualTypeOf<30_000>()
		expectTypeOf<contract.DetachableExecOptions>().toExtend<root.SandboxExecOptions>()
		expectTypeOf({
			timeout: 1,
			detach: true,
			reattachWindowMs: 5,
		}).toExtend<contract.DetachableExecOptions>()
		expectTypeOf({ fromOffset: 0 }).toExtend<contract.AttachExecutionOptions>()
		expectTypeOf({}).toExtend<contract.CancelExecutionOptions>()
		expectTypeOf<'output_not_retained'>().toExtend<contract.AttachRefusal>()
	})

	it('keeps SandboxExecOptions free of the detachable fields', () => {
		expectTypeOf<keyof root.SandboxExecOptions>().toEqualTypeOf<
			| 'timeout'
			| 'env'
			| 'cwd'
			| 'onOutput'
			| 'signal'
			| 'stdin'
			| 'collectOutput'
			| 'keepDescendants'
		>()
	})
})

describe('package root: transport limits, feature names, wire and handle types', () => {
	it('exports the transport and execution errors, each a SandboxError', () => {
		expectTypeOf<Instance<typeof root.AgentWriteFileTooLargeError>>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof root.AgentPreauthFrameTooLargeError>
		>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof root.AgentReadFileStreamUnsupportedError>
		>().toExtend<root.SandboxError>()
		expectTypeOf<Instance<typeof root.AgentDialFailedError>>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof root.RemoteCancellationUnknownError>
		>().toExtend<root.SandboxError>()
		expectTypeOf<Instance<typeof root.RemoteProtocolError>>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof contract.RemoteByteCountError>
		>().toExtend<root.RemoteProtocolError>()
		expectTypeOf<
			Instance<typeof contract.AgentReadFileTooLargeError>
		>().toExtend<root.SandboxError>()
		expectTypeOf<Instance<typeof contract.RemoteCommandError>>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof contract.RemoteResultIncompleteError>
		>().toExtend<root.SandboxError>()
	})

	it('leaves the transport, the sandbox over it and the file verbs to @namzu/sandbox/agent or inside', () => {
		expectTypeOf<typeof root>().not.toHaveProperty('AgentTransport')
		expectTypeOf<typeof root>().not.toHaveProperty('createAgentSandbox')
		// The spec's two building blocks are on the root too (R15-3a6651c-30), the same values as ./agent's.
		expectTypeOf<typeof root.RemoteExecutionController>().toEqualTypeOf<
			typeof agent.RemoteExecutionController
		>()
		expectTypeOf<typeof root.walkFilesViaExec>().toEqualTypeOf<typeof agent.walkFilesViaExec>()
		expectTypeOf<typeof root>().not.toHaveProperty('readFileThroughAgent')
		expectTypeOf<typeof root>().not.toHaveProperty('writeFileThroughAgent')
		expectTypeOf<typeof root>().not.toHaveProperty('FrameReader')
		// The refusal code table is for a tier's author (./agent); the table to errors is internal.
		expectTypeOf<typeof root>().not.toHaveProperty('AGENT_REFUSAL')
		expectTypeOf<typeof root>().not.toHaveProperty('parseRefusal')
		expectTypeOf<typeof root>().not.toHaveProperty('REFUSAL_TO_ERROR')
		expectTypeOf<typeof agent>().not.toHaveProperty('REFUSAL_TO_ERROR')
		expectTypeOf<typeof agent>().not.toHaveProperty('formatRefusal')
		expectTypeOf<typeof agent.AGENT_REFUSAL.path_too_long>().toEqualTypeOf<'path_too_long'>()
		expectTypeOf<ReturnType<typeof agent.parseRefusal>['known']>().toEqualTypeOf<
			agent.AgentRefusalCode | undefined
		>()
		expectTypeOf<
			Instance<typeof contract.AgentOpRefusedError>['refusal']
		>().toEqualTypeOf<agent.WireRefusal>()
		expectTypeOf<typeof agent.AgentTransport>().toBeConstructibleWith({
			kind: 'unix',
			path: '/run/agent.sock',
		})
		expectTypeOf<typeof agent.createAgentSandbox>().returns.toEqualTypeOf<agent.AgentSandbox>()
	})

	it('exports the transport limits and the feature names with their wire values', () => {
		expectTypeOf<typeof root.DEFAULT_MAX_WRITE_FILE_BYTES>().toEqualTypeOf<1_073_741_824>()
		expectTypeOf<typeof contract.DEFAULT_MAX_READ_FILE_BYTES>().toEqualTypeOf<1_073_741_824>()
		expectTypeOf<typeof contract.DEFAULT_SESSION_READ_MAX_BYTES>().toEqualTypeOf<67_108_864>()
		expectTypeOf<typeof contract.DEFAULT_MAX_OUTPUT_BYTES>().toEqualTypeOf<104_857_600>()
		expectTypeOf({ maxOutputBytes: 1024 }).toExtend<root.AgentExecOptions>()
		expectTypeOf<contract.DetachableExecOptions>().toExtend<root.AgentExecOptions>()
		expectTypeOf<typeof root.GUEST_FRAME_LIMIT_BYTES>().toEqualTypeOf<268_435_456>()
		expectTypeOf<typeof root.TCP_PREAUTH_FRAME_LIMIT_BYTES>().toEqualTypeOf<8_388_608>()
		expectTypeOf<typeof agent.AGENT_PROTOCOL_VERSION>().toEqualTypeOf<2>()
		expectTypeOf<typeof root.REMOTE_EXECUTION_PROTOCOL_VERSION>().toEqualTypeOf<2>()
		expectTypeOf<typeof root.FIRECRACKER_AGENT_PROTOCOL_VERSION>().toEqualTypeOf<2>()
		expectTypeOf<typeof root.WRITE_FILE_PARTS_FEATURE>().toEqualTypeOf<'write-file-parts'>()
		expectTypeOf<typeof root.READ_FILE_STREAM_FEATURE>().toEqualTypeOf<'read-file-stream'>()
	})

	it('exports the wire and handle types', () => {
		expectTypeOf({ offset: 0, final: true, renameTo: 'a' }).toExtend<root.WriteFilePart>()
		expectTypeOf({ path: 'a', offset: 1, length: 2 }).toExtend<root.ReadFileStreamRequest>()
		expectTypeOf({ type: 'end' as const, bytesSent: 0 }).toExtend<root.ReadFileStreamEvent>()
		expectTypeOf({
			kind: 'tcp' as const,
			host: 'h',
			port: 1,
			token: 't',
		}).toExtend<root.SandboxAgentHandle>()
		expectTypeOf<root.SandboxAgentHandle>().toEqualTypeOf<agent.SandboxAgentHandle>()
	})
})

describe('package root: quiesce, flush, stream heartbeat', () => {
	it('exports the quiesce, flush and stream-silence errors, each a SandboxError', () => {
		expectTypeOf<Instance<typeof contract.QuiesceUnsupportedError>>().toExtend<root.SandboxError>()
		expectTypeOf<Instance<typeof contract.QuiesceUnconfirmedError>>().toExtend<root.SandboxError>()
		expectTypeOf<Instance<typeof contract.FlushUnsupportedError>>().toExtend<root.SandboxError>()
		expectTypeOf<Instance<typeof contract.FlushUnconfirmedError>>().toExtend<root.SandboxError>()
		expectTypeOf<Instance<typeof contract.AgentStreamSilentError>>().toExtend<root.SandboxError>()
	})

	it('exports GuestDiedError, a SandboxError carrying how the guest ended', () => {
		expectTypeOf<Instance<typeof root.GuestDiedError>>().toExtend<root.SandboxError>()
		expectTypeOf<Instance<typeof root.GuestDiedError>['oomKilled']>().toEqualTypeOf<
			boolean | undefined
		>()
		expectTypeOf<contract.GuestExit['signal']>().toEqualTypeOf<NodeJS.Signals | null>()
	})

	it('exports the feature names and heartbeat constants with their wire values, the protocol version unchanged', () => {
		expectTypeOf<typeof root.QUIESCE_FEATURE>().toEqualTypeOf<'quiesce'>()
		expectTypeOf<typeof root.FLUSH_FEATURE>().toEqualTypeOf<'flush'>()
		expectTypeOf<typeof root.STREAM_HEARTBEAT_FEATURE>().toEqualTypeOf<'stream-heartbeat'>()
		expectTypeOf<typeof agent.BINARY_FRAMES_FEATURE>().toEqualTypeOf<'binary-frames'>()
		expectTypeOf<typeof agent.EXECUTE_RESERVES_FEATURE>().toEqualTypeOf<'execute-reserves'>()
		expectTypeOf<typeof root.DEFAULT_STREAM_HEARTBEAT_MS>().toEqualTypeOf<15_000>()
		expectTypeOf<typeof root.MIN_STREAM_HEARTBEAT_MS>().toEqualTypeOf<100>()
		expectTypeOf<typeof root.STREAM_HEARTBEAT_MISS_LIMIT>().toEqualTypeOf<3>()
		expectTypeOf<typeof root.STREAM_HEARTBEAT_MAX_ECHO_FACTOR>().toEqualTypeOf<4>()
		expectTypeOf<typeof agent.AGENT_PROTOCOL_VERSION>().toEqualTypeOf<2>()
	})

	it('exports the StreamHeartbeat, QuiesceScope, QuiescedProcess and report types', () => {
		expectTypeOf<root.StreamHeartbeat>().toEqualTypeOf<{ readonly type: 'heartbeat' }>()
		expectTypeOf<root.QuiesceScope>().toEqualTypeOf<'pid-namespace' | 'owned-sessions'>()
		expectTypeOf({
			pid: 7,
			command: 'sleep 30',
			signal: 'SIGKILL' as const,
		}).toExtend<root.QuiescedProcess>()
		expectTypeOf<contract.QuiesceReport['stopped']>().toEqualTypeOf<
			readonly root.QuiescedProcess[]
		>()
		expectTypeOf({
			scope: 'owned-sessions' as const,
			graceMs: 1,
			rounds: 2,
			stopped: [],
		}).toExtend<contract.QuiesceReport>()
		expectTypeOf({ durationMs: 1, workspace: '/workspace' }).toExtend<contract.FlushReport>()
	})

	it('the contract Sandbox gains neither quiesce nor flush; only the agent-backed sandbox has them', () => {
		expectTypeOf<root.Sandbox>().not.toHaveProperty('quiesce')
		expectTypeOf<root.Sandbox>().not.toHaveProperty('flush')
		expectTypeOf<agent.AgentSandbox>().toHaveProperty('quiesce').toBeFunction()
		expectTypeOf<agent.AgentSandbox>().toHaveProperty('flush').toBeFunction()
		expectTypeOf<root.LocalSandbox>().toHaveProperty('quiesce').toBeFunction()
		expectTypeOf<root.LocalSandbox>().toHaveProperty('flush').toBeFunction()
	})
})

describe('package root: Kubernetes API bounds', () => {
	it('exports the default 30000 and the floor 1000 from the package root', () => {
		expectTypeOf<typeof root.DEFAULT_API_REQUEST_TIMEOUT_MS>().toEqualTypeOf<30_000>()
		expectTypeOf<typeof root.MIN_API_REQUEST_TIMEOUT_MS>().toEqualTypeOf<1_000>()
	})
})

describe('package root: the error model', () => {
	it('exports GuestFeatureUnsupportedError, and each named feature error is one', () => {
		expectTypeOf<
			Instance<typeof contract.GuestFeatureUnsupportedError>
		>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof contract.GuestFeatureUnsupportedError>['feature']
		>().toEqualTypeOf<agent.AgentFeature>()
		expectTypeOf<
			Instance<typeof contract.GuestFeatureUnsupportedError>['operation']
		>().toEqualTypeOf<string>()
		expectTypeOf<
			Instance<typeof contract.SessionsUnsupportedError>
		>().toExtend<contract.GuestFeatureUnsupportedError>()
		expectTypeOf<
			Instance<typeof contract.ExecutionAttachUnsupportedError>
		>().toExtend<contract.GuestFeatureUnsupportedError>()
		expectTypeOf<
			Instance<typeof root.AgentReadFileStreamUnsupportedError>
		>().toExtend<contract.GuestFeatureUnsupportedError>()
		expectTypeOf<
			Instance<typeof contract.QuiesceUnsupportedError>
		>().toExtend<contract.GuestFeatureUnsupportedError>()
		expectTypeOf<
			Instance<typeof contract.FlushUnsupportedError>
		>().toExtend<contract.GuestFeatureUnsupportedError>()
	})

	it('types KubernetesApiError.reason as the failure kind, the Status reason apart', () => {
		expectTypeOf<
			root.KubernetesApiError['reason']
		>().toEqualTypeOf<kubernetes.KubernetesApiFailureReason>()
		expectTypeOf<root.KubernetesApiError['statusReason']>().toEqualTypeOf<string | undefined>()
	})

	it('exports the acquire failures that travel as themselves, each a SandboxError', () => {
		expectTypeOf<
			Instance<typeof kubernetes.KubernetesClaimUnboundError>
		>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof kubernetes.KubernetesPodUnusableError>
		>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof kubernetes.KubernetesTemplateInvalidError>
		>().toExtend<root.SandboxError>()
	})
})

describe('package root: the local tier’s hardening', () => {
	it('exports the confinement, network and limit refusals, each a SandboxError', () => {
		expectTypeOf<Instance<typeof local.LocalPathOptionError>>().toExtend<root.SandboxError>()
		expectTypeOf<Instance<typeof local.LocalWorkspaceBusyError>>().toExtend<root.SandboxError>()
		expectTypeOf<Instance<typeof local.LocalHelperUnavailableError>>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof local.LocalSandboxUidsExhaustedError>
		>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof local.LocalStateDirUnreachableError>
		>().toExtend<root.SandboxError>()
		expectTypeOf<Instance<typeof local.LocalStateEntryUnsafeError>>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof local.LocalNetworkUnavailableError>
		>().toExtend<root.SandboxError>()
		expectTypeOf<Instance<typeof local.LocalNetworkSetupError>>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof local.DefaultLimitsUnavailableError>
		>().toExtend<root.SandboxError>()
		expectTypeOf<Instance<typeof local.DiskLimitUnavailableError>>().toExtend<root.SandboxError>()
	})

	it('takes the new create and backend options', () => {
		expectTypeOf<local.LocalSandboxCreateConfig['cpuLimit']>().toEqualTypeOf<number | undefined>()
		expectTypeOf<local.LocalSandboxCreateConfig['diskLimitMb']>().toEqualTypeOf<
			number | undefined
		>()
		expectTypeOf<root.LocalBackendConfig['defaultLimits']>().toEqualTypeOf<
			local.DefaultLimitsMode | undefined
		>()
		expectTypeOf<root.LocalBackendConfig['sandboxUidRange']>().toEqualTypeOf<
			local.SandboxUidRange | undefined
		>()
	})
})

describe('package root: Kubernetes workspaces', () => {
	it('exports createKubernetesWorkspace taking the backend config and answering a KubernetesWorkspace', () => {
		expectTypeOf<typeof root.createKubernetesWorkspace>()
			.parameter(0)
			.toEqualTypeOf<root.KubernetesBackendConfig>()
		expectTypeOf<typeof root.createKubernetesWorkspace>()
			.parameter(1)
			.toEqualTypeOf<root.KubernetesWorkspaceOptions>()
		expectTypeOf<
			typeof root.createKubernetesWorkspace
		>().returns.resolves.toEqualTypeOf<root.KubernetesWorkspace>()
	})

	it('types KubernetesWorkspace as the SDK Sandbox plus the workspace verbs, origin required', () => {
		expectTypeOf<root.KubernetesWorkspace>().toExtend<root.Sandbox>()
		expectTypeOf<
			root.KubernetesWorkspace['origin']
		>().toEqualTypeOf<root.KubernetesWorkspaceOrigin>()
		expectTypeOf<root.KubernetesWorkspaceOrigin>().toEqualTypeOf<
			'created' | 'adopted-running' | 'resumed'
		>()
		expectTypeOf<root.KubernetesWorkspace['suspended']>().toEqualTypeOf<boolean>()
		expectTypeOf<root.KubernetesWorkspace['suspend']>()
			.parameter(0)
			.toEqualTypeOf<root.KubernetesWorkspaceSuspendOptions | undefined>()
		expectTypeOf<root.KubernetesWorkspace['resume']>()
			.parameter(0)
			.toEqualTypeOf<kubernetes.KubernetesWorkspaceResumeOptions | undefined>()
		expectTypeOf<kubernetes.KubernetesWorkspaceResumeOptions>().toExtend<root.KubernetesWorkspaceTransitionOptions>()
		expectTypeOf<root.KubernetesWorkspace['destroy']>()
			.parameter(0)
			.toEqualTypeOf<root.KubernetesWorkspaceDestroyOptions | undefined>()
		expectTypeOf<root.KubernetesWorkspace['flush']>()
			.parameter(0)
			.toEqualTypeOf<root.KubernetesFlushOptions | undefined>()
		expectTypeOf<
			root.KubernetesWorkspace['flush']
		>().returns.resolves.toEqualTypeOf<root.KubernetesFlushReport>()
		expectTypeOf<root.KubernetesWorkspace['quiesce']>()
			.parameter(0)
			.toEqualTypeOf<root.KubernetesQuiesceOptions | undefined>()
		expectTypeOf<
			root.KubernetesWorkspace['quiesce']
		>().returns.resolves.toEqualTypeOf<root.KubernetesQuiesceReport>()
		expectTypeOf<root.KubernetesWorkspace['readFileStream']>().toBeFunction()
		expectTypeOf<root.KubernetesWorkspace['walkFiles']>().toBeFunction()
	})

	it('leaves the SDK Sandbox contract unchanged: no suspended status, no suspend/resume, no deleteDisk', () => {
		expectTypeOf<root.SandboxStatus>().toEqualTypeOf<'creating' | 'ready' | 'busy' | 'destroyed'>()
		expectTypeOf<root.Sandbox>().not.toHaveProperty('suspend')
		expectTypeOf<root.Sandbox>().not.toHaveProperty('resume')
		expectTypeOf<root.SandboxDestroyOptions>().not.toHaveProperty('deleteDisk')
	})

	it('types the transition options: suspend is the transition options plus quiesce and flush, destroy gains quiesce', () => {
		expectTypeOf<root.KubernetesWorkspaceSuspendOptions>().toExtend<root.KubernetesWorkspaceTransitionOptions>()
		expectTypeOf<root.KubernetesWorkspaceSuspendOptions['quiesce']>().toEqualTypeOf<
			root.KubernetesWorkspaceQuiesceRequest | undefined
		>()
		expectTypeOf<root.KubernetesWorkspaceTransitionOptions>().not.toHaveProperty('quiesce')
		expectTypeOf<root.KubernetesWorkspaceDestroyOptions['quiesce']>().toEqualTypeOf<
			root.KubernetesWorkspaceQuiesceRequest | undefined
		>()
		expectTypeOf<root.KubernetesWorkspaceDestroyOptions['deleteDisk']>().toEqualTypeOf<
			boolean | undefined
		>()
		expectTypeOf<root.KubernetesWorkspaceFlushRequest>().toEqualTypeOf<
			boolean | { readonly timeoutMs?: number }
		>()
		expectTypeOf<root.KubernetesWorkspaceStartFailurePolicy>().toEqualTypeOf<'suspend' | 'leave'>()
		expectTypeOf<root.KubernetesWorkspaceOptions['onStartFailure']>().toEqualTypeOf<
			root.KubernetesWorkspaceStartFailurePolicy | undefined
		>()
		expectTypeOf<root.KubernetesWorkspaceTransitionOptions['onStartFailure']>().toEqualTypeOf<
			root.KubernetesWorkspaceStartFailurePolicy | undefined
		>()
	})

	it('exports the workspace errors, each a SandboxError, and the spec names of the shared flush and quiesce classes', () => {
		expectTypeOf<Instance<typeof root.KubernetesWorkspaceDiskError>>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof root.KubernetesWorkspaceMismatchError>
		>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof root.KubernetesWorkspaceSuspendTimeoutError>
		>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof root.KubernetesWorkspaceSuspendedError>
		>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof root.KubernetesFlushUnreachableError>
		>().toExtend<root.SandboxError>()
		expectTypeOf<typeof root.KubernetesFlushUnconfirmedError>().toEqualTypeOf<
			typeof contract.FlushUnconfirmedError
		>()
		expectTypeOf<typeof root.KubernetesFlushUnsupportedError>().toEqualTypeOf<
			typeof contract.FlushUnsupportedError
		>()
		expectTypeOf<typeof root.KubernetesQuiesceUnconfirmedError>().toEqualTypeOf<
			typeof contract.QuiesceUnconfirmedError
		>()
		expectTypeOf<typeof root.KubernetesQuiesceUnsupportedError>().toEqualTypeOf<
			typeof contract.QuiesceUnsupportedError
		>()
		expectTypeOf<typeof root.FLUSH_FEATURE>().toEqualTypeOf<'flush'>()
		expectTypeOf<typeof root.QUIESCE_FEATURE>().toEqualTypeOf<'quiesce'>()
		expectTypeOf<root.QuiesceScope>().toEqualTypeOf<'pid-namespace' | 'owned-sessions'>()
		expectTypeOf<root.KubernetesQuiesceReport['stopped']>().toEqualTypeOf<
			readonly root.QuiescedProcess[]
		>()
	})
})
