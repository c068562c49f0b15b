/**
 * `createKubernetesWorkspace(config, options)`: every check that needs no request first (the
 * backend config, the options, the name, the egress config resolved against the workspace's own
 * template — so its default policy is `<workspace template>-egress`), then a start
 * (workspace-start.ts) with network checks that run on every call, never cached across calls, and
 * the handle (kubernetes-workspace.ts) over the session it brought up. A workspace is always a
 * directly POSTed `Sandbox`: `warmPoolName` is ignored, no claim is ever created.
 */

import type { RemoteExecutionControllerOptions } from '../../../host/exec/remote-execution-controller.js'
import type { AgentTransportOptions } from '../../../host/transport/agent-transport-options.js'
import { createKubernetesClient } from '../api/create-kubernetes-client.js'
import { apiPortOf } from '../client-port.js'
import type { KubernetesApiPort } from '../kubernetes-api-port.js'
import {
	type KubernetesBackendConfig,
	resolveKubernetesBackendConfig,
} from '../kubernetes-backend-config.js'
import { KUBERNETES_WORKSPACE_ROOT } from '../kubernetes-sandbox-provider.js'
import { resolveEgressConfig } from '../network/egress-config.js'
import { KubernetesNetworkVerifier } from '../network/network-verifier.js'
import { refuseWorkspacePerSandboxEgress } from '../network/per-sandbox-config.js'
import { KubernetesWorkspaceHandle } from './kubernetes-workspace.js'
import type { KubernetesWorkspace } from './kubernetes-workspace-interface.js'
import { workspaceSandboxName } from './workspace-name.js'
import { checkWorkspaceOptions, type KubernetesWorkspaceOptions } from './workspace-options.js'
import { startWorkspace, type WorkspaceStartContext } from './workspace-start.js'

/** Seams for tests: the API port, the guest root, shorter transport and execution windows. */
export interface KubernetesWorkspaceDependencies {
	readonly api?: KubernetesApiPort
	readonly rootDir?: string
	readonly transportOptions?: AgentTransportOptions
	readonly execution?: Omit<RemoteExecutionControllerOptions, 'defaultTimeoutMs'>
	readonly now?: () => number
	readonly wallClock?: () => number
}

/**
 * A persistent workspace: the `Sandbox` named `namzu-ws-<workspaceId>` on a block disk, created or
 * adopted (and woken when asleep), with `suspend()`, `resume()`, `refresh()`, `flush()`,
 * `quiesce()` and a `destroy()` that deletes the disk only when asked. `epoch` fences every
 * lifecycle write; `refreshPodTemplate` wakes a suspended workspace onto the current template.
 */
export async function createKubernetesWorkspace(
	config: KubernetesBackendConfig,
	options: KubernetesWorkspaceOptions,
): Promise<KubernetesWorkspace>
/** @internal Tests replace the API client, the guest root and the windows. */
export async function createKubernetesWorkspace(
	config: KubernetesBackendConfig,
	options: KubernetesWorkspaceOptions,
	dependencies: KubernetesWorkspaceDependencies,
): Promise<KubernetesWorkspace>
export async function createKubernetesWorkspace(
	config: KubernetesBackendConfig,
	options: KubernetesWorkspaceOptions,
	dependencies: KubernetesWorkspaceDependencies = {},
): Promise<KubernetesWorkspace> {
	const checked = checkWorkspaceOptions(options)
	refuseWorkspacePerSandboxEgress(config.egress)
	const name = workspaceSandboxName(checked.workspaceId)
	const resolved = resolveKubernetesBackendConfig(config)
	const templateName = checked.sandboxTemplateName ?? resolved.sandboxTemplateName
	const egress = resolveEgressConfig(config.egress, {
		namespace: resolved.namespace,
		sandboxTemplateName: templateName,
	})
	const workspaceConfig = {
		...resolved,
		sandboxTemplateName: templateName,
		...(egress === undefined ? {} : { egress }),
	}
	checked.signal?.throwIfAborted()
	const api =
		dependencies.api ??
		apiPortOf(
			createKubernetesClient(resolved.access, {
				...(resolved.apiRequestTimeoutMs === undefined
					? {}
					: { apiRequestTimeoutMs: resolved.apiRequestTimeoutMs }),
			}),
		)
	const network = new KubernetesNetworkVerifier({
		api,
		namespace: resolved.namespace,
		sandboxTemplateName: templateName,
		agentPort: resolved.agentPort,
		...(egress === undefined ? {} : { egress }),
		ingress: resolved.ingress,
	})
	const rootDir = dependencies.rootDir ?? KUBERNETES_WORKSPACE_ROOT
	const now = dependencies.now ?? (() => performance.now())
	const wallClock = dependencies.wallClock ?? (() => Date.now())
	const start: Omit<WorkspaceStartContext, 'onSuspendLanded' | 'network'> = {
		api,
		config: workspaceConfig,
		name,
		workspaceId: checked.workspaceId,
		templateName,
		...(checked.runtimeClassName === undefined
			? {}
			: { runtimeClassName: checked.runtimeClassName }),
		session: {
			config: workspaceConfig,
			rootDir,
			api,
			...(dependencies.transportOptions ? { transportOptions: dependencies.transportOptions } : {}),
			...(dependencies.execution ? { execution: dependencies.execution } : {}),
		},
		now,
		wallClock,
	}
	const started = await startWorkspace(
		{ ...start, ...(network.active ? { network } : {}), onSuspendLanded: () => {} },
		{
			...(checked.signal ? { signal: checked.signal } : {}),
			onStartFailure: checked.onStartFailure ?? 'suspend',
			...(checked.epoch === undefined ? {} : { epoch: checked.epoch }),
			...(checked.refreshPodTemplate === true ? { refreshPodTemplate: true } : {}),
		},
	)
	return new KubernetesWorkspaceHandle({
		api,
		config: workspaceConfig,
		options: checked,
		rootDir,
		started,
		start,
		now,
		wallClock,
	})
}
