/**
 * `deleteKubernetesWorkspace(config, workspaceId, { signal, epoch })`: the `DELETE` of
 * `namzu-ws-<workspaceId>` — disk and all — without opening the workspace: no pod is started, no
 * agent dialed. An object already gone counts as deleted; a `DELETE` that fails rejects and may be
 * sent again. With `epoch`, the DELETE is fenced (fenced-write.ts): a workspace held at a higher
 * epoch is refused with `KubernetesWorkspacePreconditionError` and left as it was.
 */
import type { FleetDependencies } from '../fleet-verbs.js'
import type { KubernetesBackendConfig } from '../kubernetes-backend-config.js'
import { deleteWorkspaceObject } from './fenced-write.js'
import { openWorkspaceFleetCall } from './workspace-fleet-call.js'

export interface KubernetesWorkspaceDeleteOptions {
	readonly signal?: AbortSignal
	/** The holder epoch the DELETE carries: refused when the workspace is held at a higher one. */
	readonly epoch?: number
}

const METHOD = 'deleteKubernetesWorkspace'

/** Deletes the workspace `workspaceId` and its disk; resolves once the API server accepted it. */
export async function deleteKubernetesWorkspace(
	config: KubernetesBackendConfig,
	workspaceId: string,
	options?: KubernetesWorkspaceDeleteOptions,
): Promise<void>
/** @internal Tests replace the API client. */
export async function deleteKubernetesWorkspace(
	config: KubernetesBackendConfig,
	workspaceId: string,
	options: KubernetesWorkspaceDeleteOptions,
	dependencies: FleetDependencies,
): Promise<void>
export async function deleteKubernetesWorkspace(
	config: KubernetesBackendConfig,
	workspaceId: string,
	options: KubernetesWorkspaceDeleteOptions = {},
	dependencies: FleetDependencies = {},
): Promise<void> {
	const call = openWorkspaceFleetCall(METHOD, 'delete', {
		config,
		workspaceId,
		options,
		keys: ['signal', 'epoch'],
		dependencies,
	})
	await deleteWorkspaceObject(call.target, call.fence)
}
