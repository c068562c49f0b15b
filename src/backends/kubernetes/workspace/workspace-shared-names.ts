/**
 * The session and reattachable-execution names a Kubernetes workspace documents, as the shared
 * classes and types themselves under their `Kubernetes*` names — the same class, never a copy,
 * so `instanceof` with either name holds. `spawnDetached` has no name here: it stays absent.
 */
export type { BackgroundJobOutput as KubernetesSessionOutput } from '../../../contract/background-job-output.js'
export {
	type AttachExecutionOptions as KubernetesAttachExecutionOptions,
	type AttachRefusal as KubernetesAttachRefusal,
	type AttachTerminalOptions as KubernetesAttachTerminalOptions,
	type DetachableExecOptions as KubernetesDetachedExecOptions,
	ExecutionAttachUnsupportedError as KubernetesExecutionAttachUnsupportedError,
	ExecutionDetachedError as KubernetesExecutionDetachedError,
	ExecutionNotAttachableError as KubernetesExecutionNotAttachableError,
	type KillSessionOptions as KubernetesKillSessionOptions,
	type PersistentTerminalOptions as KubernetesOpenTerminalOptions,
	type ReadSessionOptions as KubernetesReadSessionOptions,
	SessionRefusedError as KubernetesSessionRefusedError,
	type SessionSummary as KubernetesSessionSummary,
	SessionsUnsupportedError as KubernetesSessionsUnsupportedError,
	type SessionTerminal as KubernetesSessionTerminal,
	type SessionTerminal as KubernetesWorkspaceTerminal,
	type StartDetachedOptions as KubernetesStartDetachedOptions,
} from '../../../host/index.js'
export type { SessionRefusalCode as KubernetesSessionRefusal } from '../../../wire/sessions.js'
