/**
 * Public names of the Kubernetes task-sandbox tier, re-exported from the package root. Each
 * sub-area lists its own names; this file only stitches them together (engineers add lines).
 */

export {
	KubernetesAcquireError,
	type KubernetesAcquireFailureReason,
	ReadinessPollTimeout,
	TERMINAL_CLAIM_REASONS,
} from './acquire-errors.js'
export * from './api/index.js'
export {
	KUBERNETES_CLAIMANT_RBAC_RULES,
	type KubernetesRbacRule,
	type KubernetesRbacVerb,
} from './claimant-rbac-rules.js'
export {
	type KubernetesFleetOptions,
	type KubernetesTaskCapacity,
	type ReleasedKubernetesTaskSandboxes,
	type ReleaseKubernetesTaskSandboxesOptions,
	readKubernetesTaskCapacity,
	releaseKubernetesTaskSandboxes,
} from './fleet-verbs.js'
export {
	DEFAULT_CLAIM_TTL_SECONDS,
	DEFAULT_KUBERNETES_AGENT_PORT,
	DEFAULT_KUBERNETES_READY_TIMEOUT_MS,
	DEFAULT_READY_POLL_INTERVAL_MS,
	type KubernetesAgentAddressMode,
	type KubernetesBackendConfig,
} from './kubernetes-backend-config.js'
export {
	KubernetesAgentAddressUnresolvableError,
	KubernetesAgentUnauthorizedError,
	KubernetesCreateOptionUnsupportedError,
	KubernetesPrivilegeProbeError,
	KubernetesSandboxDestroyedError,
	KubernetesSandboxGoneError,
} from './kubernetes-sandbox-errors.js'
export {
	createKubernetesSandboxProvider,
	KUBERNETES_WORKSPACE_ROOT,
} from './kubernetes-sandbox-provider.js'
export { KubernetesTaskSandbox } from './kubernetes-task-sandbox.js'
