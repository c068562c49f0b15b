// The portable contract: every name here is public at the package root.
export type { BackgroundJobOutput } from './background-job-output.js'
export type { EgressPolicy, EgressPolicyKind } from './egress.js'
export {
	FileWalkLimitError,
	SandboxArgumentError,
	SandboxBackendNotImplementedError,
	SandboxConfigError,
	SandboxDestroyedError,
	SandboxError,
	type SandboxErrorOptions,
	SandboxFileError,
	SandboxPathEscapeError,
} from './errors.js'
export type { SandboxCreateConfig, SandboxProvider, SandboxWorkspaceMode } from './provider.js'
export type { SandboxRetirementObservation } from './retirement.js'
export {
	type OpenTerminalOptions,
	SANDBOX_ENVIRONMENTS,
	SANDBOX_STATUSES,
	type Sandbox,
	type SandboxAttachProcessOptions,
	type SandboxDestroyOptions,
	type SandboxEnvironment,
	type SandboxExecOptions,
	type SandboxExecResult,
	type SandboxExposedPort,
	type SandboxExposePortOptions,
	type SandboxFileEntry,
	type SandboxId,
	type SandboxListFilesOptions,
	type SandboxNetworkPolicy,
	type SandboxOutputChunk,
	type SandboxOutputTruncation,
	type SandboxOutputTruncationReason,
	type SandboxProcess,
	type SandboxProcessKillOptions,
	type SandboxReadFileOptions,
	type SandboxReadFileStreamOptions,
	type SandboxSpawnOptions,
	type SandboxStatus,
	type SandboxTcpConnection,
	type SandboxTcpConnectOptions,
	type SandboxWalkFilesOptions,
	type SandboxWriteFileOptions,
	type TerminalExit,
	type TerminalSession,
	type TerminalSize,
} from './sandbox.js'
