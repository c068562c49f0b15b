// The workspace handle against a scripted API and real guest agents (scripted-workspace-api.ts):
// the request sequence of create, suspend and resume, and the gate while suspended.
import { createHash } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { createKubernetesWorkspace } from '../../../src/backends/kubernetes/workspace/create-kubernetes-workspace.js'
import type { KubernetesWorkspace } from '../../../src/index.js'
import { KubernetesWorkspaceSuspendedError } from '../../../src/index.js'
import { scriptedBackendBase } from './local-guest-config.js'
import {
	blockTemplate,
	type ScriptedWorkspaceApi,
	type ScriptedWorkspaceApiOptions,
	scriptedWorkspaceApi,
} from './scripted-workspace-api.js'

const apis: ScriptedWorkspaceApi[] = []
afterEach(async () => {
	await Promise.allSettled(apis.splice(0).map((api) => api.stop()))
})

async function workspaceApi(
	options: Partial<ScriptedWorkspaceApiOptions> = {},
): Promise<ScriptedWorkspaceApi> {
	const api = await scriptedWorkspaceApi({ template: blockTemplate(), ...options })
	apis.push(api)
	return api
}

async function open(api: ScriptedWorkspaceApi, workspaceId = 'w1'): Promise<KubernetesWorkspace> {
	return createKubernetesWorkspace(
		{
			...scriptedBackendBase,
			sandboxTemplateName: 'ws-template',
			agentAddress: 'pod-ip',
			agentPort: api.agentPort,
			readyTimeoutMs: 10_000,
		},
		{ workspaceId },
		{
			api: api.port,
			rootDir: api.model.workspace ?? '/',
		},
	)
}

/** The log with consecutive repeats of one poll read folded into one entry. */
function collapse(log: readonly string[]): string[] {
	return log.filter((entry, index) => entry !== log[index - 1])
}

const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

describe('Kubernetes workspace handle (scripted API, real agents)', () => {
	it('creates, serves exec and files, suspends after a flush, refuses while suspended, resumes on a new pod uid with the same bytes', async () => {
		const api = await workspaceApi()
		const workspace = await open(api)
		expect(workspace.origin).toBe('created')
		expect(workspace.id).toBe('namzu-ws-w1')
		const disk = api.model.workspace ?? ''
		const content = new Uint8Array(4096).map((_, i) => (i * 7) % 256)
		await workspace.writeFile(`${disk}/data.bin`, content)
		const result = await workspace.exec('cat', [`${disk}/data.bin`])
		expect(result.exitCode).toBe(0)
		const firstPod = api.model.pod?.metadata.uid
		await workspace.suspend()
		expect(workspace.suspended).toBe(true)
		expect(workspace.status).toBe('destroyed')
		await expect(workspace.exec('true')).rejects.toBeInstanceOf(KubernetesWorkspaceSuspendedError)
		await workspace.resume()
		expect(workspace.suspended).toBe(false)
		expect(api.model.pod?.metadata.uid).not.toBe(firstPod)
		expect(sha(await workspace.readFile(`${disk}/data.bin`))).toBe(sha(content))
		expect(workspace.origin).toBe('created')
		const sandbox = '/apis/agents.x-k8s.io/v1beta1/namespaces/ns/sandboxes'
		const pod = '/api/v1/namespaces/ns/pods/namzu-ws-w1'
		expect(collapse(api.log())).toEqual([
			'GET /apis/extensions.agents.x-k8s.io/v1beta1/namespaces/ns/sandboxtemplates/ws-template',
			`POST ${sandbox}`,
			`GET ${sandbox}/namzu-ws-w1`,
			`GET ${pod}`,
			`PATCH ${sandbox}/namzu-ws-w1`,
			`GET ${pod}`,
			`GET ${sandbox}/namzu-ws-w1`,
			`PATCH ${sandbox}/namzu-ws-w1`,
			`GET ${pod}`,
		])
		const [suspendPatch, resumePatch] = api.calls.filter((call) => call.verb === 'PATCH')
		expect(suspendPatch?.body).toMatchObject({ spec: { operatingMode: 'Suspended' } })
		expect(resumePatch?.body).toMatchObject({ spec: { operatingMode: 'Running' } })
		const created = api.calls.find((call) => call.verb === 'POST')?.body as {
			spec: Record<string, unknown>
		}
		expect(created.spec).not.toHaveProperty('shutdownTime')
		expect(created.spec).not.toHaveProperty('shutdownPolicy')
		expect(created.spec.volumeClaimTemplates).toEqual(blockTemplate().spec?.volumeClaimTemplates)
	})
})
