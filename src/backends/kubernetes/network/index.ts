/** Public names of the Kubernetes network boundary, re-exported by the tier's `index.ts`. */
export {
	DEFAULT_EGRESS_PROFILE_LABEL_KEY,
	type KubernetesCiliumDnsNames,
	type KubernetesCiliumNarrowing,
	type KubernetesEgressConfig,
	type KubernetesEgressEngine,
	type KubernetesEgressPolicy,
	type KubernetesEgressVerification,
	type KubernetesOnlyEgressPolicy,
} from './egress-config.js'
export type { KubernetesIngressConfig, KubernetesIngressEngine } from './ingress-config.js'
export {
	type EgressPolicyRefusal,
	type EgressPolicyVerdict,
	type ExaminedEgressPolicy,
	type ExaminedIngressPolicy,
	type IngressPolicyRefusal,
	type IngressPolicyVerdict,
	KubernetesEgressNarrowingUnsupportedError,
	KubernetesEgressPolicyConfigError,
	KubernetesEgressPolicyMismatchError,
	KubernetesEgressPolicyNotAppliedError,
	KubernetesEgressPolicyUnionError,
	KubernetesEgressProfileConfigError,
	KubernetesIngressPolicyError,
	KubernetesPodLabelNotObservedError,
	KubernetesPodLabelsRejectedError,
	type KubernetesPolicyKind,
	KubernetesUnenforceableEgressPolicyError,
	type UnreadIngressPolicySource,
	type UnreadPolicySource,
} from './network-errors.js'
export {
	DEFAULT_PER_SANDBOX_EGRESS_LABEL_KEY,
	type KubernetesPerSandboxEgressConfig,
} from './per-sandbox-config.js'
export {
	KubernetesAdmissionFenceMissingError,
	type KubernetesAdmissionFenceObject,
	KubernetesAdmissionFenceUnreadableError,
	KubernetesNetworkPolicyHostError,
	type KubernetesNetworkPolicyHostProblem,
	KubernetesOwnerUidMissingError,
	KubernetesPerSandboxEgressConfigError,
	KubernetesWorkspacePerSandboxEgressConfigError,
} from './per-sandbox-errors.js'
export { PER_SANDBOX_POLICY_NAME_PREFIX } from './per-sandbox-policy-object.js'
