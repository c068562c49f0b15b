// Public names of the local (process / bubblewrap) tier, all re-exported from the package root.

export type { LimitController } from '../machine/cgroups/cgroup-layout.js'
export { AGENT_TASK_HEADROOM, type DefaultLimitsMode } from '../machine/cgroups/cgroup-limits.js'
export {
	DefaultLimitsUnavailableError,
	type DiskLimitRefusal,
	DiskLimitUnavailableError,
} from '../machine/cgroups/limit-errors.js'
export type {
	ClaimedIdentity,
	ClaimedWorkspace,
	SandboxHostClaims,
} from '../machine/claims/host-claims.js'
export {
	destroyLocalSandbox,
	type LocalSandboxListing,
	type LocalSandboxRegistryOptions,
	listLocalSandboxes,
} from '../machine/claims/kept-alive-registry.js'
export type { ReapReason } from '../machine/claims/reap-decision.js'
export {
	collectLocalGarbage,
	type LocalGarbageOptions,
	type LocalGarbageReport,
	type ReapedLocalSandbox,
	reapLocalSandboxes,
} from '../machine/claims/reap-leftovers.js'
export type {
	LocalIsolation,
	LocalSandboxDescriptor,
	LocalSandboxState,
} from '../machine/claims/sandbox-descriptor.js'
export {
	DEFAULT_SANDBOX_UID_RANGE,
	MIN_SANDBOX_UID,
	type SandboxUidRange,
} from '../machine/claims/sandbox-identity.js'
export type { CgroupControllerCheck, IsolationCheck } from '../machine/isolation-check.js'
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
} from '../machine/machine-errors.js'
export {
	LocalNetworkSetupError,
	LocalNetworkUnavailableError,
	type MissingNetworkTool,
} from '../machine/network/network-errors.js'
export {
	DEFAULT_KEEP_ALIVE_MS,
	MAX_KEEP_ALIVE_MS,
	MIN_KEEP_ALIVE_MS,
} from '../machine/spec/keep-alive-lifetime.js'
export type { LocalSandboxCreateConfig } from '../machine/spec/machine-sandbox-spec.js'
export {
	DEFAULT_CPU_SHARES,
	DEFAULT_CPU_WEIGHT,
	DEFAULT_MAX_PROCESSES,
	DEFAULT_MEMORY_LIMIT_MB,
	type TmpfsSizes,
} from '../machine/spec/sandbox-limits.js'
export type {
	AgentReachReport,
	SandboxIdentityReport,
	SandboxRootReport,
} from './confinement-report.js'
export type {
	DefaultSandboxBounds,
	LocalBoundsReport,
	LocalNetworkReport,
} from './describe-local-bounds.js'
export type {
	DescribeLocalIsolationOptions,
	LocalIsolationReport,
} from './describe-local-isolation.js'
export { describeLocalIsolation } from './describe-local-isolation.js'
export type { LocalBackendConfig, LocalToolPaths } from './local-backend-config.js'
export { DEFAULT_BWRAP_PATH, DEFAULT_READY_TIMEOUT_MS } from './local-backend-config.js'
export {
	BubblewrapUnavailableError,
	LocalKeepAliveUnavailableError,
	LocalProviderClosedError,
	LocalSandboxNotFoundError,
	type LocalSandboxNotFoundReason,
	LocalStateDirUnreachableError,
} from './local-errors.js'
export type { LocalSandbox, LocalSandboxVerb } from './local-sandbox.js'
export {
	createLocalSandboxProvider,
	LOCAL_PROVIDER_ID,
	LOCAL_PROVIDER_NAME,
	LOCAL_PROVIDER_NAME_UNCONFINED,
	type LocalProviderHooks,
	type LocalSandboxProvider,
} from './local-sandbox-provider.js'
export { type OpenLocalSandboxOptions, openLocalSandbox } from './open-local-sandbox.js'
