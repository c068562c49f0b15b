// Public names of the local (bubblewrap) tier, all on `@namzu/sandbox/local`, a few on the root.

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
