/** Public names of the Kubernetes workspace, re-exported by the tier's barrel and the package root. */

export type {
	FlushOptions as KubernetesFlushOptions,
	FlushReport as KubernetesFlushReport,
	QuiesceOptions as KubernetesQuiesceOptions,
	QuiesceReport as KubernetesQuiesceReport,
} from '../../../host/lifecycle/agent-lifecycle-ops.js'
export {
	FlushUnsupportedError as KubernetesFlushUnsupportedError,
	QuiesceUnsupportedError as KubernetesQuiesceUnsupportedError,
} from '../../../host/refusals/guest-feature-errors.js'
export {
	FlushUnconfirmedError as KubernetesFlushUnconfirmedError,
	QuiesceUnconfirmedError as KubernetesQuiesceUnconfirmedError,
} from '../../../host/refusals/refusal-errors.js'
export { createKubernetesWorkspace } from './create-kubernetes-workspace.js'
export type { KubernetesWorkspace } from './kubernetes-workspace-interface.js'
export {
	KubernetesFlushUnreachableError,
	KubernetesWorkspaceDiskError,
	type KubernetesWorkspaceDiskProblem,
	KubernetesWorkspaceMismatchError,
	type KubernetesWorkspaceMismatchField,
	KubernetesWorkspaceSuspendedError,
	KubernetesWorkspaceSuspendTimeoutError,
} from './workspace-errors.js'
export type {
	KubernetesWorkspaceDestroyOptions,
	KubernetesWorkspaceFlushRequest,
	KubernetesWorkspaceOptions,
	KubernetesWorkspaceQuiesceRequest,
	KubernetesWorkspaceSuspendOptions,
	KubernetesWorkspaceTransitionOptions,
} from './workspace-options.js'
export type {
	KubernetesWorkspaceOrigin,
	KubernetesWorkspaceStartFailurePolicy,
} from './workspace-start.js'
