/**
 * `@namzu/sandbox/container`: the OCI container tier in full (runc, crun, runsc and the ACI standby
 * pool): the provider, its config and layout (mounts, skills, tool paths) with `resolveLayout`,
 * the defaults, and every error the tier raises. Pinned by `test/package/entry-points.test.ts`.
 */

export {
	type ACIStandbyPoolBackendConfig,
	type AzureFileShareSource,
	type ContainerBackendConfig,
	ContainerEgressUnsupportedError,
	type ContainerMount,
	type ContainerMountSource,
	ContainerProviderClosedError,
	type ContainerProviderHooks,
	type ContainerRuntime,
	ContainerRuntimeCommandError,
	ContainerRuntimeUnavailableError,
	type ContainerSandbox,
	type ContainerSandboxCreateConfig,
	type ContainerSandboxLayout,
	ContainerSandboxLayoutValidationError,
	type ContainerSandboxProvider,
	type ContainerSkillMount,
	type ContainerToolPaths,
	createContainerSandboxProvider,
	DEFAULT_CONTAINER_PATHS,
	DEFAULT_CONTAINER_READY_TIMEOUT_MS,
	type HostDirSource,
	type InImageSource,
	MAX_CONTAINER_WARM_POOL_SIZE,
	type ResolvedContainerMount,
	type ResolvedContainerSandboxLayout,
	type ResolvedContainerSkillMount,
	type RunscPlatform,
	resolveLayout,
} from './backends/container/index.js'
