/**
 * Public names of the Kubernetes task-sandbox tier, all on `@namzu/sandbox/kubernetes`, the
 * specification's on the root too. The API
 * client area lists its own public names in `api/index.ts`; this file names them again so the
 * tier's list is read in one place.
 */

export {
	KubernetesAcquireError,
	type KubernetesAcquireErrorFields,
	type KubernetesAcquireFailureReason,
	KubernetesClaimUnboundError,
	KubernetesPodUnusableError,
	KubernetesTemplateInvalidError,
	ReadinessPollTimeout,
	TERMINAL_CLAIM_REASONS,
} from './acquire-errors.js'
export {
	DEFAULT_API_REQUEST_TIMEOUT_MS,
	type KubernetesAccess,
	KubernetesAlreadyGoneError,
	KubernetesApiError,
	type KubernetesApiErrorFields,
	type KubernetesApiFailureReason,
	type KubernetesApiFailureTransport,
	KubernetesApiRequestTimeoutConfigError,
	KubernetesApiTimeoutError,
	type KubernetesClusterAccess,
	KubernetesConflictError,
	KubernetesCredentialError,
	type KubernetesFailureKind,
	type KubernetesHttpMethod,
	type KubernetesInClusterAccess,
	type KubernetesKubeconfigAccess,
	KubernetesPatchNotAppliedError,
	type KubernetesServerAccess,
	MIN_API_REQUEST_TIMEOUT_MS,
} from './api/index.js'
export { checkKubernetesAccess } from './check-kubernetes-access.js'
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
	KubernetesAgentRetiringError,
	KubernetesAgentUnauthorizedError,
	KubernetesCreateOptionUnsupportedError,
	type KubernetesHandleTier,
	KubernetesPrivilegeProbeError,
	KubernetesSandboxDestroyedError,
	KubernetesSandboxGoneError,
} from './kubernetes-sandbox-errors.js'
export {
	createKubernetesSandboxProvider,
	KUBERNETES_WORKSPACE_ROOT,
} from './kubernetes-sandbox-provider.js'
export { KubernetesTaskSandbox } from './kubernetes-task-sandbox.js'
export {
	DEFAULT_EGRESS_PROFILE_LABEL_KEY,
	DEFAULT_PER_SANDBOX_EGRESS_LABEL_KEY,
	type EgressPolicyRefusal,
	type EgressPolicyVerdict,
	type ExaminedEgressPolicy,
	type ExaminedIngressPolicy,
	type IngressPolicyRefusal,
	type IngressPolicyVerdict,
	KubernetesAdmissionFenceMissingError,
	type KubernetesAdmissionFenceObject,
	KubernetesAdmissionFenceUnreadableError,
	type KubernetesCiliumDnsNames,
	type KubernetesCiliumNarrowing,
	type KubernetesEgressConfig,
	type KubernetesEgressEngine,
	KubernetesEgressNarrowingUnsupportedError,
	type KubernetesEgressPolicy,
	KubernetesEgressPolicyConfigError,
	KubernetesEgressPolicyMismatchError,
	KubernetesEgressPolicyNotAppliedError,
	KubernetesEgressPolicyUnionError,
	KubernetesEgressProfileConfigError,
	type KubernetesEgressVerification,
	type KubernetesIngressConfig,
	type KubernetesIngressEngine,
	KubernetesIngressPolicyError,
	KubernetesNetworkPolicyHostError,
	type KubernetesNetworkPolicyHostProblem,
	type KubernetesOnlyEgressPolicy,
	KubernetesOwnerUidMissingError,
	type KubernetesPerSandboxEgressConfig,
	KubernetesPerSandboxEgressConfigError,
	KubernetesPodLabelNotObservedError,
	KubernetesPodLabelsRejectedError,
	type KubernetesPolicyKind,
	KubernetesUnenforceableEgressPolicyError,
	KubernetesWorkspacePerSandboxEgressConfigError,
	PER_SANDBOX_POLICY_NAME_PREFIX,
	type UnreadIngressPolicySource,
	type UnreadPolicySource,
} from './network/index.js'
export { KubernetesPerSandboxEgressTaskSandbox } from './per-sandbox-egress-task-sandbox.js'
export type {
	KubernetesWorkspaceAgentState,
	KubernetesWorkspaceCancellationNotice,
	KubernetesWorkspaceGuestVerdict,
} from './workspace/cancellation-diagnosis.js'
export type {
	KubernetesGuestRef,
	KubernetesWorkspaceIdentity,
} from './workspace/guest-identity.js'
export type {
	KubernetesGuestRestartEvent,
	KubernetesGuestRestartListener,
	KubernetesGuestRestartReason,
} from './workspace/guest-restart-events.js'
export {
	createKubernetesWorkspace,
	deleteKubernetesWorkspace,
	type KubernetesFlushOptions,
	type KubernetesFlushReport,
	KubernetesFlushUnconfirmedError,
	KubernetesFlushUnreachableError,
	KubernetesFlushUnsupportedError,
	type KubernetesQuiesceOptions,
	type KubernetesQuiesceReport,
	KubernetesQuiesceUnconfirmedError,
	KubernetesQuiesceUnsupportedError,
	type KubernetesWorkspace,
	type KubernetesWorkspaceDeleteOptions,
	type KubernetesWorkspaceDestroyOptions,
	KubernetesWorkspaceDiskError,
	type KubernetesWorkspaceDiskProblem,
	type KubernetesWorkspaceFencedOperation,
	type KubernetesWorkspaceFlushRequest,
	type KubernetesWorkspaceListOptions,
	KubernetesWorkspaceMismatchError,
	type KubernetesWorkspaceMismatchField,
	type KubernetesWorkspaceOptions,
	type KubernetesWorkspaceOrigin,
	KubernetesWorkspacePreconditionError,
	type KubernetesWorkspaceQuiesceRequest,
	type KubernetesWorkspaceRefreshOptions,
	type KubernetesWorkspaceResumeOptions,
	type KubernetesWorkspaceStartFailurePolicy,
	type KubernetesWorkspaceSummary,
	KubernetesWorkspaceSuspendedError,
	type KubernetesWorkspaceSuspendOptions,
	KubernetesWorkspaceSuspendTimeoutError,
	type KubernetesWorkspaceSuspensionNotice,
	type KubernetesWorkspaceTransitionOptions,
	listKubernetesWorkspaces,
	suspendKubernetesWorkspace,
} from './workspace/index.js'
export {
	KubernetesWorkspaceGuestGoneError,
	KubernetesWorkspaceReplacedError,
} from './workspace/workspace-guest-errors.js'
export {
	type KubernetesAttachExecutionOptions,
	type KubernetesAttachRefusal,
	type KubernetesAttachTerminalOptions,
	type KubernetesDetachedExecOptions,
	KubernetesExecutionAttachUnsupportedError,
	KubernetesExecutionDetachedError,
	KubernetesExecutionNotAttachableError,
	type KubernetesKillSessionOptions,
	type KubernetesOpenTerminalOptions,
	type KubernetesReadSessionOptions,
	type KubernetesSessionOutput,
	type KubernetesSessionRefusal,
	KubernetesSessionRefusedError,
	type KubernetesSessionSummary,
	KubernetesSessionsUnsupportedError,
	type KubernetesSessionTerminal,
	type KubernetesStartDetachedOptions,
	type KubernetesWorkspaceTerminal,
} from './workspace/workspace-shared-names.js'
