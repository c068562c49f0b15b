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
export {
	deleteKubernetesWorkspace,
	type KubernetesWorkspaceDeleteOptions,
} from './delete-kubernetes-workspace.js'
export type { KubernetesWorkspace } from './kubernetes-workspace-interface.js'
export {
	type KubernetesWorkspaceListOptions,
	listKubernetesWorkspaces,
} from './list-kubernetes-workspaces.js'
export { suspendKubernetesWorkspace } from './suspend-kubernetes-workspace.js'
export {
	KubernetesFlushUnreachableError,
	KubernetesWorkspaceDiskError,
	type KubernetesWorkspaceDiskProblem,
	type KubernetesWorkspaceFencedOperation,
	KubernetesWorkspaceMismatchError,
	type KubernetesWorkspaceMismatchField,
	KubernetesWorkspacePreconditionError,
	KubernetesWorkspaceSuspendedError,
	KubernetesWorkspaceSuspendTimeoutError,
	type KubernetesWorkspaceSuspensionNotice,
} from './workspace-errors.js'
export type {
	KubernetesWorkspaceDestroyOptions,
	KubernetesWorkspaceFlushRequest,
	KubernetesWorkspaceOptions,
	KubernetesWorkspaceQuiesceRequest,
	KubernetesWorkspaceRefreshOptions,
	KubernetesWorkspaceResumeOptions,
	KubernetesWorkspaceSuspendOptions,
	KubernetesWorkspaceTransitionOptions,
} from './workspace-options.js'
export type {
	KubernetesWorkspaceOrigin,
	KubernetesWorkspaceStartFailurePolicy,
} from './workspace-start.js'
export type { KubernetesWorkspaceSummary } from './workspace-summary.js'
