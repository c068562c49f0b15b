// Public surface of the local (process / bubblewrap) tier.

// The privilege probe lives in src/host (the Kubernetes tier will share it); re-exported here so it
// reaches the package root. Re-exporting the same bindings from src/host/index.ts too is harmless.
export type {
	PrivilegeProbeFailure,
	PrivilegeProbeOptions,
	PrivilegeProbeTarget,
	ProcStatusPrivileges,
} from '../../host/privilege-probe.js'
export {
	assertDeprivileged,
	PRIVILEGE_PROBE_MAX_TIMEOUT_MS,
	parseProcStatusPrivileges,
	privilegeViolations,
	probeSandboxPrivileges,
	SandboxPrivilegeProbeError,
} from '../../host/privilege-probe.js'
export { AGENT_TASK_HEADROOM, type DefaultLimitsMode } from './cgroup-limits.js'
export type {
	DefaultSandboxBounds,
	LocalBoundsReport,
	LocalNetworkReport,
} from './describe-local-bounds.js'
export type {
	CgroupControllerCheck,
	IsolationCheck,
	LocalIsolationReport,
} from './describe-local-isolation.js'
export { describeLocalIsolation } from './describe-local-isolation.js'
export {
	DEFAULT_KEEP_ALIVE_MS,
	MAX_KEEP_ALIVE_MS,
	MIN_KEEP_ALIVE_MS,
} from './lifetime-watchdog.js'
export {
	DefaultLimitsUnavailableError,
	type DiskLimitRefusal,
	DiskLimitUnavailableError,
} from './limit-errors.js'
export type {
	LocalBackendConfig,
	LocalIsolation,
	LocalToolPaths,
} from './local-backend-config.js'
export { DEFAULT_BWRAP_PATH, DEFAULT_READY_TIMEOUT_MS } from './local-backend-config.js'
export {
	BubblewrapUnavailableError,
	CgroupLimitsUnavailableError,
	LocalEgressUnsupportedError,
	LocalKeepAliveUnavailableError,
	LocalProviderClosedError,
	LocalSandboxCleanupError,
	LocalSandboxNotFoundError,
	type LocalSandboxNotFoundReason,
	LocalSandboxStartError,
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
export {
	destroyLocalSandbox,
	type LocalSandboxListing,
	type LocalSandboxRegistryOptions,
	listLocalSandboxes,
	reapLocalSandboxes,
} from './local-sandbox-registry.js'
export type { LocalSandboxCreateConfig } from './local-sandbox-spec.js'
export {
	LocalNetworkSetupError,
	LocalNetworkUnavailableError,
	type MissingNetworkTool,
} from './network-errors.js'
export { type OpenLocalSandboxOptions, openLocalSandbox } from './open-local-sandbox.js'
export type { LocalSandboxDescriptor, LocalSandboxState } from './sandbox-descriptor.js'
export {
	DEFAULT_CPU_SHARES,
	DEFAULT_CPU_WEIGHT,
	DEFAULT_MAX_PROCESSES,
	DEFAULT_MEMORY_LIMIT_MB,
	type TmpfsSizes,
} from './sandbox-limits.js'
