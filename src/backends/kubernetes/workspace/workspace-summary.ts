/**
 * What a fleet verb reports about a workspace without waking it: everything read off the `Sandbox`
 * object alone — its id, mode, template, creation time, the moment its mode last changed (only
 * when the annotation is there: a workspace whose mode never changed is not reported as changed at
 * creation), its holder epoch and its template revision. Pure.
 */
import { type KubernetesObject, TEMPLATE_LABEL } from '../kubernetes-objects.js'
import { storedHolderEpoch } from './holder-epoch.js'
import { templateRevisionOf } from './pod-template-refresh.js'
import { OPERATING_MODE_CHANGED_AT, operatingModeOf } from './workspace-mode-patch.js'
import { workspaceIdOf } from './workspace-name.js'

export interface KubernetesWorkspaceSummary {
	readonly workspaceId: string
	/** `namzu-ws-<workspaceId>`. */
	readonly sandboxName: string
	/** `spec.operatingMode`; `Running` when unset (the CRD default). */
	readonly operatingMode: 'Running' | 'Suspended'
	/** The `SandboxTemplate` it was built from (`sandbox.namzu.ai/template`), when labelled. */
	readonly template: string | undefined
	/** `metadata.creationTimestamp`. */
	readonly createdAt: string | undefined
	/** `sandbox.namzu.ai/operating-mode-changed-at`; absent when the mode never changed. */
	readonly operatingModeChangedAt?: string
	/** The stored holder epoch (0 without one); `undefined` when the annotation is not an epoch. */
	readonly holderEpoch: number | undefined
	/** `sandbox.namzu.ai/pod-template-hash`; `undefined` for a workspace created before it. */
	readonly templateRevision: string | undefined
}

/** The summary of `sandbox`, or undefined when it is not a workspace's object. */
export function summarizeWorkspace(
	sandbox: KubernetesObject,
): KubernetesWorkspaceSummary | undefined {
	const sandboxName = sandbox.metadata.name
	const workspaceId = workspaceIdOf(sandboxName)
	if (workspaceId === undefined || sandboxName === undefined) return undefined
	const changedAt = sandbox.metadata.annotations?.[OPERATING_MODE_CHANGED_AT]
	return {
		workspaceId,
		sandboxName,
		operatingMode: operatingModeOf(sandbox),
		template: sandbox.metadata.labels?.[TEMPLATE_LABEL],
		createdAt: sandbox.metadata.creationTimestamp,
		...(typeof changedAt === 'string' ? { operatingModeChangedAt: changedAt } : {}),
		holderEpoch: storedHolderEpoch(sandbox),
		templateRevision: templateRevisionOf(sandbox),
	}
}
