/**
 * `listKubernetesWorkspaces(config, { signal })`: ONE `GET` of the namespace's `sandboxes`
 * collection, summarised per workspace object (workspace-summary.ts). Sends no write, creates no
 * pod, dials no agent. Needs `list` on `sandboxes` — the only verb that does: without it the API
 * server's `403` names `list` and nothing else changes.
 */
import { callSite, signalOfOptions } from '../../../contract/argument-validators.js'
import { connect, type FleetDependencies } from '../fleet-verbs.js'
import {
	type KubernetesBackendConfig,
	resolveKubernetesBackendConfig,
} from '../kubernetes-backend-config.js'
import { kubernetesPaths } from '../kubernetes-objects.js'
import { type KubernetesWorkspaceSummary, summarizeWorkspace } from './workspace-summary.js'

export interface KubernetesWorkspaceListOptions {
	readonly signal?: AbortSignal
}

/** One summary per workspace in `config.namespace`, in the order the API server listed them. */
export async function listKubernetesWorkspaces(
	config: KubernetesBackendConfig,
	options?: KubernetesWorkspaceListOptions,
): Promise<KubernetesWorkspaceSummary[]>
/** @internal Tests replace the API client. */
export async function listKubernetesWorkspaces(
	config: KubernetesBackendConfig,
	options: KubernetesWorkspaceListOptions,
	dependencies: FleetDependencies,
): Promise<KubernetesWorkspaceSummary[]>
export async function listKubernetesWorkspaces(
	config: KubernetesBackendConfig,
	options: KubernetesWorkspaceListOptions = {},
	dependencies: FleetDependencies = {},
): Promise<KubernetesWorkspaceSummary[]> {
	const signal = signalOfOptions(callSite('listKubernetesWorkspaces'), options)
	const resolved = resolveKubernetesBackendConfig(config)
	signal?.throwIfAborted()
	const api = connect(resolved, dependencies)
	const list = await api.list(
		kubernetesPaths.sandboxes(resolved.namespace),
		signal ? { signal } : {},
	)
	return list.items.flatMap((item) => {
		const summary = summarizeWorkspace(item)
		return summary === undefined ? [] : [summary]
	})
}
