// Public names of the machine layer (what the tiers on this host share), all on
// `@namzu/sandbox/local`, a few on the root.

export type { LimitController } from './cgroups/cgroup-layout.js'
export { AGENT_TASK_HEADROOM, type DefaultLimitsMode } from './cgroups/cgroup-limits.js'
export type { CgroupMigrationCheck } from './cgroups/cgroup-migration-mode.js'
export {
	CheckpointSpaceExhaustedError,
	type CheckpointSpaceOperation,
	DefaultLimitsUnavailableError,
	type DiskLimitRefusal,
	DiskLimitUnavailableError,
} from './cgroups/limit-errors.js'
export type {
	ClaimedIdentity,
	ClaimedWorkspace,
	SandboxHostClaims,
} from './claims/host-claims.js'
export {
	destroyLocalSandbox,
	type LocalSandboxListing,
	type LocalSandboxRegistryOptions,
	listLocalSandboxes,
} from './claims/kept-alive-registry.js'
export type { ReapReason } from './claims/reap-decision.js'
export {
	collectLocalGarbage,
	type LocalGarbageOptions,
	type LocalGarbageReport,
	type ReapedLocalSandbox,
	reapLocalSandboxes,
} from './claims/reap-leftovers.js'
export type {
	LocalIsolation,
	LocalSandboxDescriptor,
	LocalSandboxState,
} from './claims/sandbox-descriptor.js'
export {
	DEFAULT_SANDBOX_UID_RANGE,
	MIN_SANDBOX_UID,
	type SandboxUidRange,
} from './claims/sandbox-identity.js'
export type { CgroupControllerCheck, IsolationCheck } from './isolation-check.js'
export {
	CgroupLimitsUnavailableError,
	LocalEgressUnsupportedError,
	LocalHelperUnavailableError,
	LocalHostToolError,
	LocalPathOptionError,
	type LocalPathOptionRefusal,
	LocalSandboxCleanupError,
	LocalSandboxStartError,
	LocalSandboxUidsExhaustedError,
	LocalStateEntryUnsafeError,
	LocalWorkspaceBusyError,
	SeccompUnsupportedArchError,
} from './machine-errors.js'
export type { MachineSandbox, MachineSandboxVerb } from './machine-sandbox.js'
export {
	LocalNetworkSetupError,
	LocalNetworkUnavailableError,
	type MissingNetworkTool,
} from './network/network-errors.js'
export { DEFAULT_MAX_CHECKPOINTS } from './snapshots/checkpoint-verbs.js'
export type { CheckpointCopyMode } from './snapshots/cow-volume-decision.js'
export {
	DEFAULT_KEEP_ALIVE_MS,
	MAX_KEEP_ALIVE_MS,
	MIN_KEEP_ALIVE_MS,
} from './spec/keep-alive-lifetime.js'
export type { LocalSandboxCreateConfig } from './spec/machine-sandbox-spec.js'
export {
	DEFAULT_CPU_SHARES,
	DEFAULT_CPU_WEIGHT,
	DEFAULT_MAX_PROCESSES,
	DEFAULT_MEMORY_LIMIT_MB,
	defaultMemoryLimitMb,
	type TmpfsSizes,
} from './spec/sandbox-limits.js'
