// The writer's request discipline, pinned on a recording port: what is sent, in what order, and
// that a refusal sends nothing. The API semantics (admission, garbage collection, RBAC) are in
// per-sandbox-egress.cluster.test.ts against the real control plane.
import { describe, expect, it } from 'vitest'
import { AdmissionFence } from '../../../../src/backends/kubernetes/network/admission-fence.js'
import { PerSandboxPolicyWriter } from '../../../../src/backends/kubernetes/network/per-sandbox-policy-writer.js'
import {
	KubernetesAdmissionFenceMissingError,
	KubernetesAdmissionFenceUnreadableError,
	KubernetesEgressPolicyMismatchError,
	KubernetesNetworkPolicyHostError,
	KubernetesOwnerUidMissingError,
	SandboxArgumentError,
} from '../../../../src/index.js'
import { type RecordedCall, scriptedApi, statusError } from '../scripted-api-port.js'

const KEY = 'sandbox.namzu.ai/per-sandbox-egress'
const VAP =
	'/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/namzu-sandbox-per-sandbox-egress'
const VAPB =
	'/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/namzu-sandbox-per-sandbox-egress'
const CNPS = '/apis/cilium.io/v2/namespaces/ns/ciliumnetworkpolicies'
const CNP = `${CNPS}/namzu-sbx-uid-1`

/** A cluster that stores what it is sent and answers the fence reads with `fence`. */
function cluster(fence: (path: string) => unknown = () => ({ metadata: {} })) {
	let stored: Record<string, unknown> | undefined
	const api = scriptedApi((call: RecordedCall) => {
		if (call.path === VAP || call.path === VAPB) return fence(call.path)
		if (call.verb === 'POST') {
			if (stored) throw statusError('POST', call.path, 409)
			stored = call.body as Record<string, unknown>
			return stored
		}
		if (call.verb === 'PATCH' && stored) {
			stored = { ...stored, spec: (call.body as { spec: unknown }).spec }
			return stored
		}
		if (call.verb === 'GET' && stored) return stored
		if (call.verb === 'DELETE') {
			stored = undefined
			return {}
		}
		throw statusError('GET', call.path, 404)
	})
	return api
}

function writer(api: ReturnType<typeof scriptedApi>, uid = 'uid-1') {
	return new PerSandboxPolicyWriter({
		api: api.port,
		namespace: 'ns',
		perSandbox: { labelKey: KEY },
		fence: new AdmissionFence(api.port),
		sandboxId: 'sb-1',
		owner: {
			apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
			kind: 'SandboxClaim',
			name: 'namzu-task-a',
			uid,
		},
	})
}

describe('the per-sandbox policy writer', () => {
	it('R15-e2024bc-05/16: proves the fence once, POSTs, reads back; a second list merge-patches the spec; [] deletes', async () => {
		const api = cluster()
		const w = writer(api)
		await w.set({ allowedHosts: ['a.example.com'] })
		await w.set({ allowedHosts: ['b.example.com'] })
		await w.set({ allowedHosts: [] })
		expect(api.log()).toEqual([
			`GET ${VAP}`,
			`GET ${VAPB}`,
			`POST ${CNPS}`,
			`GET ${CNP}`,
			`POST ${CNPS}`,
			`PATCH ${CNP}`,
			`GET ${CNP}`,
			`DELETE ${CNP}`,
		])
		expect(api.calls[5]?.body).toMatchObject({
			spec: { egress: [{}, { toFQDNs: [{ matchName: 'b.example.com' }] }] },
		})
	})

	it.each([
		[
			'an allowlist entry',
			{ allowedHosts: ['a.example.com:443'] },
			KubernetesNetworkPolicyHostError,
		],
		['a policy that is not an object', 'a.example.com', SandboxArgumentError],
		['allowedHosts that is not a list', { allowedHosts: 'a.example.com' }, SandboxArgumentError],
	])('R15-e2024bc-20: refuses %s before any request', async (_what, policy, type) => {
		const api = cluster()
		await expect(writer(api).set(policy as never)).rejects.toBeInstanceOf(type)
		expect(api.log()).toEqual([])
	})

	it('R15-e2024bc-21: refuses a .domain with tlsServerNames before the fence is read', async () => {
		const api = cluster()
		const w = new PerSandboxPolicyWriter({
			api: api.port,
			namespace: 'ns',
			perSandbox: {
				labelKey: KEY,
				narrowing: { hostPorts: {}, tlsServerNames: true, tlsPorts: [443] },
			},
			fence: new AdmissionFence(api.port),
			sandboxId: 'sb-1',
			owner: { apiVersion: 'v', kind: 'Sandbox', name: 'n', uid: 'u' },
		})
		await expect(w.set({ allowedHosts: ['.example.com'] })).rejects.toBeInstanceOf(
			KubernetesNetworkPolicyHostError,
		)
		expect(api.log()).toEqual([])
	})

	it('refuses with KubernetesOwnerUidMissingError when the create answered no uid, before any request', async () => {
		const api = cluster()
		await expect(writer(api, '').set({ allowedHosts: ['a.example.com'] })).rejects.toBeInstanceOf(
			KubernetesOwnerUidMissingError,
		)
		expect(api.log()).toEqual([])
	})

	it.each([
		[404, KubernetesAdmissionFenceMissingError],
		[403, KubernetesAdmissionFenceUnreadableError],
		[401, KubernetesAdmissionFenceUnreadableError],
	])(
		'R15-e2024bc-06/07: a fence read answered %i rejects with its class and writes nothing; a later call reads again',
		async (status, type) => {
			let answer: number | undefined = status
			const api = cluster((path) => {
				if (answer !== undefined && path === VAPB) throw statusError('GET', path, answer)
				return { metadata: {} }
			})
			const w = writer(api)
			await expect(w.set({ allowedHosts: ['a.example.com'] })).rejects.toBeInstanceOf(type)
			expect(api.log()).toEqual([`GET ${VAP}`, `GET ${VAPB}`])
			answer = undefined
			await w.set({ allowedHosts: ['a.example.com'] })
			expect(api.log().slice(2, 4)).toEqual([`GET ${VAP}`, `GET ${VAPB}`])
		},
	)

	it('R15-e2024bc-16: a read-back that differs from what was sent rejects with KubernetesEgressPolicyMismatchError naming the field', async () => {
		const api = scriptedApi((call) => {
			if (call.verb === 'GET' && call.path === CNP) {
				const sent = api.calls.find((c) => c.verb === 'POST')?.body as Record<string, unknown>
				return { ...sent, spec: { ...(sent.spec as object), egress: [] } }
			}
			return { metadata: {} }
		})
		const error = await writer(api)
			.set({ allowedHosts: ['a.example.com'] })
			.catch((e: unknown) => e)
		expect(error).toBeInstanceOf(KubernetesEgressPolicyMismatchError)
		expect(error).toMatchObject({ field: 'spec.egress[0]', policyName: 'namzu-sbx-uid-1' })
	})

	it('runs two concurrent calls one after the other, so the last list is what stays', async () => {
		const api = cluster()
		const w = writer(api)
		await Promise.all([
			w.set({ allowedHosts: ['a.example.com'] }),
			w.set({ allowedHosts: ['b.example.com'] }),
		])
		const last = api.calls.filter((c) => c.verb === 'PATCH').at(-1)?.body
		expect(last).toMatchObject({
			spec: { egress: [{}, { toFQDNs: [{ matchName: 'b.example.com' }] }] },
		})
	})
})
