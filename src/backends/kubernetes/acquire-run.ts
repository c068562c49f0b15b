/**
 * The shapes one acquire's steps share (acquire-task-sandbox.ts creates, acquire-binding.ts waits
 * for the bind, acquire-pod.ts reads the bound pod), and how a failure of any step is named.
 */
import { KubernetesAcquireError, ReadinessReadCutError } from './acquire-errors.js'
import type { KubernetesApiPort } from './kubernetes-api-port.js'
import type { ResolvedKubernetesBackendConfig } from './kubernetes-backend-config.js'
import { acquireReasonForApiFailure, apiFailureShape } from './readiness.js'
import type { OpenedWatch } from './readiness-watch.js'

/** Budget of the cleanup DELETE after a failed acquire, independent of the caller's signal. */
export const ACQUIRE_CLEANUP_TIMEOUT_MS = 5000

export interface AcquiredTaskSandbox {
	/** The bound Sandbox's cluster name (`kubectl get sandbox <id>`). */
	readonly id: string
	/** What this acquire created and destroy deletes. */
	readonly created: {
		readonly kind: 'claim' | 'sandbox'
		readonly path: string
		readonly name: string
		/** The created object's `metadata.uid` as the POST answered it; absent when it carried none. */
		readonly uid?: string
	}
	readonly podName: string
	/** The pod's `metadata.uid`: the agent's bind token. */
	readonly token: string
	/** Service FQDN or pod IP, per `agentAddress`. */
	readonly host: string
}

/**
 * What one acquire knows once it has started: its budget, its signal and the labels it writes onto
 * the pod (per-sandbox: they name the object, so they are set when the object is named).
 */
export interface AcquireRun {
	readonly api: KubernetesApiPort
	readonly config: ResolvedKubernetesBackendConfig
	readonly deadlineMs: number
	readonly now: () => number
	readonly signal: AbortSignal | undefined
	readonly profileLabels: Readonly<Record<string, string>>
	readonly perSandboxKey: string | undefined
	/** The labels this backend writes onto the pod, confirmed on it before the sandbox is handed out. */
	podLabels: Readonly<Record<string, string>>
}

export interface CreatedObject {
	readonly kind: 'claim' | 'sandbox'
	readonly path: string
	readonly name: string
	readonly collectionPath: string
	readonly uid?: string
	/** The readiness watch, opened beside the create. */
	readonly watch?: OpenedWatch
}

export interface BoundPod {
	readonly sandbox: AcquiredTaskSandbox
	/** The pod's real labels, as read after the bind. */
	readonly podLabels: Readonly<Record<string, string>>
}

/** Maps an API failure to the taxonomy, or hands it back as itself. */
export function classifyAcquireFailure(error: unknown, objectName?: string): unknown {
	if (error instanceof KubernetesAcquireError) return error
	const reason =
		error instanceof ReadinessReadCutError
			? 'api-timeout'
			: acquireReasonForApiFailure(apiFailureShape(error))
	if (reason === undefined) return error
	return new KubernetesAcquireError(reason, {
		cause: error,
		...(objectName === undefined ? {} : { objectName }),
	})
}
