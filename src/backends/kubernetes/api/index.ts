/**
 * The Kubernetes API client area. `createKubernetesClient` itself stays internal (imported by the
 * backend from create-kubernetes-client.ts, not re-exported from the package root); what the
 * package root exports from here is the public part: the timeout constants, the errors a caller
 * catches by class, and the access shapes a backend config takes.
 */
export {
	KubernetesAlreadyGoneError,
	KubernetesApiError,
	type KubernetesApiErrorFields,
	type KubernetesApiFailureReason,
	type KubernetesApiFailureTransport,
	KubernetesApiRequestTimeoutConfigError,
	KubernetesApiTimeoutError,
	KubernetesConflictError,
	KubernetesCredentialError,
	type KubernetesFailureKind,
	type KubernetesHttpMethod,
	KubernetesPatchNotAppliedError,
} from './api-errors.js'
export {
	DEFAULT_API_REQUEST_TIMEOUT_MS,
	MIN_API_REQUEST_TIMEOUT_MS,
} from './api-request-timeout.js'
export type {
	KubernetesAccess,
	KubernetesAccess as KubernetesClusterAccess,
	KubernetesInClusterAccess,
	KubernetesKubeconfigAccess,
	KubernetesServerAccess,
} from './kubernetes-access.js'
