// Public names of the container tier, all on `@namzu/sandbox/container`, a few on the root.

export {
	ACIArmError,
	type ACIGroupFailureReason,
	ACIGroupNotReadyError,
	ACIOptionUnsupportedError,
	type ArmFailureReason,
	type ArmOperation,
} from './aci/aci-errors.js'

export type {
	ACIStandbyPoolBackendConfig,
	ContainerBackendConfig,
	ContainerToolPaths,
} from './container-backend-config.js'
export {
	DEFAULT_CONTAINER_READY_TIMEOUT_MS,
	MAX_CONTAINER_WARM_POOL_SIZE,
} from './container-backend-config.js'
export {
	ContainerEgressUnsupportedError,
	ContainerProviderClosedError,
	ContainerRuntimeCommandError,
	ContainerRuntimeUnavailableError,
	ContainerSandboxLayoutValidationError,
} from './container-errors.js'
export {
	type AzureFileShareSource,
	type ContainerMount,
	type ContainerMountSource,
	type ContainerSandboxLayout,
	type ContainerSkillMount,
	DEFAULT_CONTAINER_PATHS,
	type HostDirSource,
	type InImageSource,
	type ResolvedContainerMount,
	type ResolvedContainerSandboxLayout,
	type ResolvedContainerSkillMount,
	resolveLayout,
} from './container-layout.js'
export {
	type ContainerProviderHooks,
	type ContainerSandbox,
	type ContainerSandboxProvider,
	createContainerSandboxProvider,
} from './container-sandbox-provider.js'
export type { ContainerSandboxCreateConfig } from './container-sandbox-spec.js'
export {
	DockerEngineReplyError,
	DockerEngineRequestError,
	DockerEngineUnreachableError,
	DockerLimitsNotEnforcedError,
} from './docker/docker-errors.js'
export type { ContainerRuntime, RunscPlatform } from './runtime-argv.js'
