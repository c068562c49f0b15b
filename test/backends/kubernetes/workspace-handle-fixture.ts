// The scripted-workspace fixture the handle suites share: a scripted API per test (stopped after
// it), the backend config that points a workspace at it, and `open` creating the handle.
import { afterEach } from 'vitest'
import type { KubernetesBackendConfig } from '../../../src/backends/kubernetes/kubernetes-backend-config.js'
import {
	createKubernetesWorkspace,
	type KubernetesWorkspaceDependencies,
} from '../../../src/backends/kubernetes/workspace/create-kubernetes-workspace.js'
import type { KubernetesWorkspace, KubernetesWorkspaceOptions } from '../../../src/index.js'
import { scriptedBackendBase } from './local-guest-config.js'
import {
	blockTemplate,
	type ScriptedWorkspaceApi,
	type ScriptedWorkspaceApiOptions,
	scriptedWorkspaceApi,
} from './scripted-workspace-api.js'

export const apis: ScriptedWorkspaceApi[] = []
export const handles: KubernetesWorkspace[] = []
afterEach(async () => {
	handles.splice(0)
	await Promise.allSettled(apis.splice(0).map((api) => api.stop()))
})

export async function workspaceApi(
	options: Partial<ScriptedWorkspaceApiOptions> = {},
): Promise<ScriptedWorkspaceApi> {
	const api = await scriptedWorkspaceApi({ template: blockTemplate(), ...options })
	apis.push(api)
	return api
}

export function backend(
	api: ScriptedWorkspaceApi,
	overrides: Partial<KubernetesBackendConfig> = {},
): KubernetesBackendConfig {
	return {
		...scriptedBackendBase,
		sandboxTemplateName: 'ws-template',
		agentAddress: 'pod-ip',
		agentPort: api.agentPort,
		readyTimeoutMs: 10_000,
		...overrides,
	}
}

export async function open(
	api: ScriptedWorkspaceApi,
	options: Partial<KubernetesWorkspaceOptions> = {},
	overrides: Partial<KubernetesBackendConfig> = {},
	dependencies: KubernetesWorkspaceDependencies = {},
): Promise<KubernetesWorkspace> {
	const workspace = await createKubernetesWorkspace(
		backend(api, overrides),
		{ workspaceId: 'w1', ...options },
		{ api: api.port, rootDir: api.model.workspace ?? '/', ...dependencies },
	)
	handles.push(workspace)
	return workspace
}

/**
 * A scripted API whose first JSON patch (a refresh) loses: just before it lands, another process
 * wakes the workspace with a plain mode change and its own pod. `raced()`: that happened.
 */
export async function wokenFirstByAnother(
	options: Partial<ScriptedWorkspaceApiOptions> = {},
): Promise<{ readonly api: ScriptedWorkspaceApi; readonly raced: () => boolean }> {
	let raced = false
	let woken: ScriptedWorkspaceApi | undefined
	const api = await workspaceApi({
		...options,
		before: async (call, model) => {
			if (raced || call.verb !== 'PATCH' || call.patchType !== 'json') return undefined
			raced = true
			if (model.sandbox)
				model.sandbox = {
					...model.sandbox,
					spec: { ...model.sandbox.spec, operatingMode: 'Running' },
				}
			await woken?.startPod()
			return undefined
		},
	})
	woken = api
	return { api, raced: () => raced }
}
