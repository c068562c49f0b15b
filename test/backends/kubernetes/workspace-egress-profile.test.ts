// The egress profile and the network checks on a workspace handle, against the scripted API and
// real guest agents (scripted-workspace-api.ts): the profile label a create writes, the adopt and
// resume refusals of a standing Sandbox without it (before any patch, so the workspace stays
// asleep), `refreshPodTemplate` writing it in the one Suspended → Running patch, and the refusal
// coming back when that patch loses; then the union and ingress checks refusing an adopt of a
// suspended workspace the policies no longer cover, before any resume patch.
import { describe, expect, it } from 'vitest'
import type { KubernetesBackendConfig } from '../../../src/backends/kubernetes/kubernetes-backend-config.js'
import type { KubernetesObject } from '../../../src/backends/kubernetes/kubernetes-objects.js'
import { resolveEgressConfig } from '../../../src/backends/kubernetes/network/egress-config.js'
import {
	translatedPolicyObject,
	translateEgressPolicy,
} from '../../../src/backends/kubernetes/network/egress-translation.js'
import { suspendKubernetesWorkspace } from '../../../src/backends/kubernetes/workspace/suspend-kubernetes-workspace.js'
import {
	type KubernetesEgressConfig,
	KubernetesEgressPolicyUnionError,
	KubernetesIngressPolicyError,
	KubernetesWorkspaceMismatchError,
} from '../../../src/index.js'
import { rejectionError } from './error-chain.js'
import type { RecordedCall } from './scripted-api-port.js'
import type { ScriptedWorkspaceApi } from './scripted-workspace-api.js'
import { backend, open, wokenFirstByAnother, workspaceApi } from './workspace-handle-fixture.js'

const NPS = '/apis/networking.k8s.io/v1/namespaces/ns/networkpolicies'
const TEMPLATE_LABEL = 'sandbox.namzu.ai/template'
const PROFILE_KEY = 'sandbox.namzu.ai/egress-profile'
const egress: KubernetesEgressConfig = {
	policy: { kind: 'deny-all' },
	profile: 'none',
	verify: 'named-object-only',
}
const withProfile: Partial<KubernetesBackendConfig> = { egress }

/** The policy an operator applied for a profile: exactly the backend's translation. */
function appliedProfilePolicy(profile: string): object {
	const resolved = resolveEgressConfig(
		{ ...egress, profile },
		{ namespace: 'ns', sandboxTemplateName: 'ws-template' },
	)
	if (!resolved) throw new Error('no egress')
	return translatedPolicyObject(translateEgressPolicy(resolved, 'ws-template'), 'ns')
}

/** Serves each profile's policy GET; every other call goes to the workspace model. */
function servePolicy(call: RecordedCall): unknown {
	const profile = /\/ws-template-([a-z]+)-egress$/.exec(call.path)?.[1]
	return call.verb === 'GET' && call.path.startsWith(NPS) && profile !== undefined
		? appliedProfilePolicy(profile)
		: undefined
}

const patchCalls = (api: ScriptedWorkspaceApi): RecordedCall[] =>
	api.calls.filter((call) => call.verb === 'PATCH')
const podLabels = (object: KubernetesObject | undefined): Record<string, unknown> =>
	((object?.spec?.podTemplate as { metadata?: { labels?: Record<string, unknown> } } | undefined)
		?.metadata?.labels ?? {}) as Record<string, unknown>
const modeOf = (api: ScriptedWorkspaceApi): unknown => api.model.sandbox?.spec.operatingMode

async function suspended(api: ScriptedWorkspaceApi): Promise<void> {
	await suspendKubernetesWorkspace(backend(api), 'w1', {}, { api: api.port })
	expect(modeOf(api)).toBe('Suspended')
}

/** Another host rewrites the stored pod template without the profile label while it sleeps. */
function dropProfileLabel(api: ScriptedWorkspaceApi): void {
	const stored = api.model.sandbox
	if (!stored) throw new Error('no sandbox')
	const rewritten = structuredClone(stored)
	delete podLabels(rewritten)[PROFILE_KEY]
	api.model.sandbox = rewritten
}

describe('the egress profile on a workspace', () => {
	it('R15-7488339-04: a create writes the profile label beside the template label on the pod template', async () => {
		const api = await workspaceApi({ intercept: servePolicy })
		await open(api, {}, withProfile)
		const post = api.calls.find((call) => call.verb === 'POST')
		expect(podLabels(post?.body as KubernetesObject)).toMatchObject({
			[TEMPLATE_LABEL]: 'ws-template',
			[PROFILE_KEY]: 'none',
		})
		// The same handle reopened adopts it: the label it wrote is the label it checks.
		const again = await open(api, {}, withProfile)
		expect(again.origin).toBe('adopted-running')
	})

	it('R15-7488339-17, R15-7488339-19: a suspended workspace without the profile is refused by name, before any patch, and stays suspended', async () => {
		const api = await workspaceApi({ intercept: servePolicy })
		await open(api)
		await suspended(api)
		api.calls.length = 0
		const error = await rejectionError(open(api, {}, withProfile))
		expect(error).toBeInstanceOf(KubernetesWorkspaceMismatchError)
		expect(error).toMatchObject({
			field: 'egressProfile',
			expected: `${PROFILE_KEY}=none`,
			actual: undefined,
			workspaceName: 'namzu-ws-w1',
		})
		expect(patchCalls(api)).toEqual([])
		expect(modeOf(api)).toBe('Suspended')
		expect(api.model.pod).toBeUndefined()
	})

	it('R15-7488339-17: a running workspace under another profile is refused too, and left as it is', async () => {
		const api = await workspaceApi({ intercept: servePolicy })
		await open(api, {}, { egress: { ...egress, profile: 'internet' } })
		const pod = api.model.pod?.metadata.uid
		api.calls.length = 0
		const error = await rejectionError(open(api, {}, withProfile))
		expect(error).toMatchObject({ field: 'egressProfile', actual: `${PROFILE_KEY}=internet` })
		expect(patchCalls(api)).toEqual([])
		expect(api.model.pod?.metadata.uid).toBe(pod)
	})

	it('R15-7488339-20: refreshPodTemplate on create lifts the refusal and writes the label in the one Suspended → Running patch', async () => {
		const api = await workspaceApi({ intercept: servePolicy })
		await open(api)
		await suspended(api)
		api.calls.length = 0
		const workspace = await open(api, { refreshPodTemplate: true }, withProfile)
		expect(workspace.origin).toBe('resumed')
		const patches = patchCalls(api)
		expect(patches).toHaveLength(1)
		expect(patches[0]?.patchType).toBe('json')
		const body = (patches[0]?.body ?? []) as { op: string; path: string; value?: unknown }[]
		const write = body.find((op) => op.path === '/spec/podTemplate')
		expect(podLabels({ metadata: {}, spec: { podTemplate: write?.value } })).toMatchObject({
			[PROFILE_KEY]: 'none',
		})
		expect(podLabels(api.model.sandbox)[PROFILE_KEY]).toBe('none')
		expect((await workspace.exec('true')).exitCode).toBe(0)
		// Now it carries the profile, a plain adopt passes.
		expect((await open(api, {}, withProfile)).origin).toBe('adopted-running')
	})

	it('R15-7488339-20: a create refresh whose patch loses to another process is refused again', async () => {
		const { api, raced } = await wokenFirstByAnother({ intercept: servePolicy })
		await open(api)
		await suspended(api)
		const error = await rejectionError(open(api, { refreshPodTemplate: true }, withProfile))
		expect(raced()).toBe(true)
		expect(error).toMatchObject({ field: 'egressProfile' })
		expect(podLabels(api.model.sandbox)[PROFILE_KEY]).toBeUndefined()
	})

	it('R15-7488339-19, R15-7488339-20: resume() refuses a pod template that lost the profile before its patch; with refreshPodTemplate it writes it back', async () => {
		const api = await workspaceApi({ intercept: servePolicy })
		const workspace = await open(api, {}, withProfile)
		await workspace.suspend({ flush: false })
		dropProfileLabel(api)
		api.calls.length = 0
		const error = await rejectionError(workspace.resume())
		expect(error).toBeInstanceOf(KubernetesWorkspaceMismatchError)
		expect(error).toMatchObject({ field: 'egressProfile' })
		expect(patchCalls(api)).toEqual([])
		expect(modeOf(api)).toBe('Suspended')
		await workspace.resume({ refreshPodTemplate: true })
		expect(patchCalls(api)).toHaveLength(1)
		expect(podLabels(api.model.sandbox)[PROFILE_KEY]).toBe('none')
		expect((await workspace.exec('true')).exitCode).toBe(0)
	})

	it('R15-7488339-20: a resume refresh whose patch loses to another process is refused again', async () => {
		const { api, raced } = await wokenFirstByAnother({ intercept: servePolicy })
		const workspace = await open(api, {}, withProfile)
		await workspace.suspend({ flush: false })
		dropProfileLabel(api)
		const error = await rejectionError(workspace.resume({ refreshPodTemplate: true }))
		expect(raced()).toBe(true)
		expect(error).toMatchObject({ field: 'egressProfile' })
	})
})

/** Ingress: one closed policy selecting the template's pods (no rule admits anyone). */
const closedIngress = {
	metadata: { name: 'namzu-sandbox-ingress' },
	spec: {
		podSelector: { matchLabels: { [TEMPLATE_LABEL]: 'ws-template' } },
		policyTypes: ['Ingress'],
	},
}
/** A second policy selecting the pods that opens the internet: the union is wider than deny-all. */
const widening = {
	metadata: { name: 'opens-everything' },
	spec: {
		podSelector: { matchLabels: { [TEMPLATE_LABEL]: 'ws-template' } },
		policyTypes: ['Egress'],
		egress: [{}],
	},
}

describe('the network checks on the adopt path of a suspended workspace', () => {
	it.each<[string, Partial<KubernetesBackendConfig>, object[], new (...args: never[]) => Error]>([
		[
			'R15-edf1d79-06: the agent port is no longer covered by any ingress policy',
			{ ingress: {} },
			[],
			KubernetesIngressPolicyError,
		],
		[
			'R15-ff6134f-09: a policy now selecting the pod widens the egress union',
			{ egress: { policy: { kind: 'deny-all' } } },
			[widening],
			KubernetesEgressPolicyUnionError,
		],
	])(
		'%s: refused before any resume patch, the object still Suspended',
		async (_title, overrides, later, refusal) => {
			let items: object[] = [closedIngress]
			const denyAll = resolveEgressConfig(
				{ policy: { kind: 'deny-all' } },
				{ namespace: 'ns', sandboxTemplateName: 'ws-template' },
			)
			if (!denyAll) throw new Error('no egress')
			const named = translatedPolicyObject(translateEgressPolicy(denyAll, 'ws-template'), 'ns')
			const api = await workspaceApi({
				intercept: (call) => {
					if (!call.path.startsWith(NPS)) return undefined
					return call.verb === 'GET' ? named : { items: [named, ...items] }
				},
			})
			await open(api, {}, overrides)
			await suspended(api)
			items = later
			api.calls.length = 0
			const error = await rejectionError(open(api, {}, overrides))
			expect(error).toBeInstanceOf(refusal)
			expect(api.log().some((entry) => entry.startsWith('LIST'))).toBe(true)
			expect(patchCalls(api)).toEqual([])
			expect(api.calls.some((call) => call.verb === 'POST')).toBe(false)
			expect(modeOf(api)).toBe('Suspended')
			expect(api.model.pod).toBeUndefined()
		},
	)
})
