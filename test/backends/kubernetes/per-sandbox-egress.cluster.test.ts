// Per-sandbox live egress against a real API server holding a CiliumNetworkPolicy CRD and the
// shipped ValidatingAdmissionPolicy (no Cilium agent: the objects and the admission decisions are
// real, enforcement is not measured). In file order: the fence missing, then unreadable; then the
// fence and the opt-in RBAC applied as shipped — the written body and its replacement patch
// admitted, every refused shape refused when the host's identity writes it directly, rbac.yaml
// alone refused with a 403 naming the verb, `[]` deleting only its own object, the claim's delete
// collecting its policy while an operator's unowned policy survives, concurrent claims writing
// distinct policies; and the method absent without the option, with no new request.
//
// Two strings of validatingadmissionpolicy-cilium.yaml are edited as an operator does: the host's
// ServiceAccount namespace (the test namespace) and the label key, because this harness's
// controller allows only the `sandbox.users.io` label domain (no allowed-label-domains file).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { resolveKubernetesBackendConfig } from '../../../src/backends/kubernetes/kubernetes-backend-config.js'
import {
	translatedPolicyObject,
	translateEgressPolicy,
} from '../../../src/backends/kubernetes/network/egress-translation.js'
import {
	DEFAULT_PER_SANDBOX_EGRESS_LABEL_KEY,
	KubernetesAdmissionFenceMissingError,
	KubernetesAdmissionFenceUnreadableError,
	type KubernetesBackendConfig,
	type KubernetesEgressConfig,
	KubernetesNetworkPolicyHostError,
	PER_SANDBOX_POLICY_NAME_PREFIX,
	type Sandbox,
} from '../../../src/index.js'
import { type KubeObject, listItems, waitGone } from '../../cluster/cluster-objects.js'
import { KubeApi } from '../../cluster/kube-api.js'
import { paths } from '../../cluster/sandbox-fixtures.js'
import { waitFor } from '../../cluster/wait-for.js'
import { manifestObjects } from '../../deploy/manifest-files.js'
import { rejection } from './error-chain.js'
import {
	backendAccess,
	listClaims,
	templateName,
	useKubernetesHarness,
} from './kubernetes-harness.js'
import { type RecordingApiProxy, startRecordingApiProxy } from './recording-api-proxy.js'
import { bindServiceAccount } from './service-account.js'

const replicas = 3
const h = useKubernetesHarness({
	poolReplicas: replicas,
	namespacePrefix: 'k8s-per-sandbox',
	refillPoolAfterEach: true,
})

// biome-ignore lint/suspicious/noExplicitAny: editing parsed YAML as an operator would
type Any = any

const LABEL_KEY = 'sandbox.users.io/per-sandbox-egress'
const HOST_ACCOUNT = 'namzu-sandbox'
const RBAC = '/apis/rbac.authorization.k8s.io/v1'
const ADMISSION = '/apis/admissionregistration.k8s.io/v1'
const cnps = (ns: string) => `/apis/cilium.io/v2/namespaces/${ns}/ciliumnetworkpolicies`
const cnp = (ns: string, name: string) => `${cnps(ns)}/${name}`
const denyAll: KubernetesEgressConfig = { policy: { kind: 'deny-all' } }
const perSandboxEgress: KubernetesEgressConfig = { ...denyAll, perSandbox: { labelKey: LABEL_KEY } }
const OPERATOR_POLICY = 'operator-egress'

let proxy: RecordingApiProxy
let hostToken = ''

function configAs(token: string, egress: KubernetesEgressConfig = perSandboxEgress) {
	return h.config({ access: backendAccess({ ...h.cluster.access, token }), egress })
}

function providerAs(token: string, egress?: KubernetesEgressConfig) {
	return h.provider(configAs(token, egress) as Partial<KubernetesBackendConfig>)
}

/** The shipped fence with the operator's two edits (the host's namespace, the label key). */
function editedFence(): Any[] {
	return manifestObjects('validatingadmissionpolicy-cilium.yaml').map((object) => {
		const text = JSON.stringify(object)
			.replaceAll('system:serviceaccount:namzu-sandboxes:', `system:serviceaccount:${h.namespace}:`)
			.replaceAll(DEFAULT_PER_SANDBOX_EGRESS_LABEL_KEY, LABEL_KEY)
			.replaceAll(
				'"kubernetes.io/metadata.name":"namzu-sandboxes"',
				`"kubernetes.io/metadata.name":"${h.namespace}"`,
			)
		return JSON.parse(text)
	})
}

function inNamespace(object: Any): Any {
	const copy = structuredClone(object)
	if (copy.metadata.namespace !== undefined) copy.metadata.namespace = h.namespace
	for (const subject of copy.subjects ?? []) subject.namespace = h.namespace
	return copy
}

const perSandboxRbac = (kind: string): Any =>
	inNamespace(manifestObjects('rbac-per-sandbox-egress.yaml').filter((o) => o.kind === kind)[0])

async function applyClusterScoped(collection: string, object: Any): Promise<void> {
	const answer = await h.cluster.api.send('POST', collection, { body: object })
	if (answer.status === 409) return
	if (answer.status >= 300)
		throw new Error(`${collection}: ${answer.status} ${JSON.stringify(answer.body)}`)
}

/** `setNetworkPolicy`, which a handle of a per-sandbox backend must have. */
function setPolicy(sandbox: Sandbox, policy: { allowedHosts: readonly string[] }): Promise<void> {
	if (!sandbox.setNetworkPolicy) throw new Error('the handle has no setNetworkPolicy')
	return sandbox.setNetworkPolicy(policy)
}

/** The live claim a sandbox came from: name and uid. */
async function claimOf(sandbox: Sandbox): Promise<KubeObject> {
	const claims = await listClaims(h.cluster, h.namespace)
	const claim = claims.find((c) => (c.status as Any)?.sandbox?.name === sandbox.id)
	if (!claim) throw new Error(`no claim bound to ${sandbox.id}`)
	return claim
}

async function policies(): Promise<readonly KubeObject[]> {
	return listItems(h.cluster.api, cnps(h.namespace))
}

/** A body the backend would write for `claim`, for the attacker's edits. */
function validBody(claim: KubeObject): Any {
	return {
		apiVersion: 'cilium.io/v2',
		kind: 'CiliumNetworkPolicy',
		metadata: {
			name: `${PER_SANDBOX_POLICY_NAME_PREFIX}${claim.metadata.uid}`,
			ownerReferences: [
				{
					apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
					kind: 'SandboxClaim',
					name: claim.metadata.name,
					uid: claim.metadata.uid,
				},
			],
		},
		spec: {
			endpointSelector: { matchLabels: { [LABEL_KEY]: claim.metadata.name } },
			egress: [
				{
					toEndpoints: [
						{
							matchLabels: {
								'k8s:io.kubernetes.pod.namespace': 'kube-system',
								'k8s:k8s-app': 'kube-dns',
							},
						},
					],
					toPorts: [
						{ ports: [{ port: '53', protocol: 'ANY' }], rules: { dns: [{ matchPattern: '*' }] } },
					],
				},
				{ toFQDNs: [{ matchName: 'api.example.com' }] },
			],
		},
	}
}

beforeAll(async () => {
	proxy = await startRecordingApiProxy(h.cluster.access)
	const resolved = resolveKubernetesBackendConfig({ ...h.config(), egress: denyAll })
	if (!resolved.egress) throw new Error('no egress')
	await h.cluster.api.create(
		paths.networkPolicies(h.namespace),
		translatedPolicyObject(translateEgressPolicy(resolved.egress, templateName), h.namespace),
	)
	// An operator's own policy, unowned: it must survive everything the host does.
	await h.cluster.api.create(cnps(h.namespace), {
		apiVersion: 'cilium.io/v2',
		kind: 'CiliumNetworkPolicy',
		metadata: { name: OPERATOR_POLICY },
		spec: {
			endpointSelector: { matchLabels: { app: 'other' } },
			egress: [{ toEntities: ['world'] }],
		},
	})
	const role = manifestObjects('rbac.yaml').find((o) => o.kind === 'Role') as Any
	hostToken = await bindServiceAccount(h.cluster.api, h.namespace, HOST_ACCOUNT, role.rules)
	await h.cluster.api.create(paths.roles(h.namespace), perSandboxRbac('Role'))
	await h.cluster.api.create(paths.roleBindings(h.namespace), perSandboxRbac('RoleBinding'))
})

afterAll(async () => {
	await proxy?.close()
	for (const [plural, name] of [
		['validatingadmissionpolicybindings', 'namzu-sandbox-per-sandbox-egress'],
		['validatingadmissionpolicies', 'namzu-sandbox-per-sandbox-egress'],
	] as const) {
		await h.cluster.api.remove(`${ADMISSION}/${plural}/${name}`).catch(() => {})
	}
})

describe('per-sandbox egress before the operator prerequisites', () => {
	it('R15-e2024bc-06: without the admission fence setNetworkPolicy rejects with KubernetesAdmissionFenceMissingError and writes nothing', async () => {
		const sandbox = await h.provider({ egress: perSandboxEgress }).create()
		h.open.push(sandbox)
		const refused = await rejection(setPolicy(sandbox, { allowedHosts: ['api.example.com'] }))
		expect(refused.error).toBeInstanceOf(KubernetesAdmissionFenceMissingError)
		expect(refused.error).toMatchObject({ objectKind: 'ValidatingAdmissionPolicy' })
		expect((await policies()).map((p) => p.metadata.name)).toEqual([OPERATOR_POLICY])
	})

	it('R15-e2024bc-07: a host with the Role but not the ClusterRole gets KubernetesAdmissionFenceUnreadableError (403) and writes nothing', async () => {
		const sandbox = await providerAs(hostToken).create()
		h.open.push(sandbox)
		const refused = await rejection(setPolicy(sandbox, { allowedHosts: ['api.example.com'] }))
		expect(refused.error).toBeInstanceOf(KubernetesAdmissionFenceUnreadableError)
		expect(refused.error).toMatchObject({ status: 403 })
		expect((await policies()).map((p) => p.metadata.name)).toEqual([OPERATOR_POLICY])
	})
})

describe('per-sandbox egress under the shipped fence and RBAC', () => {
	beforeAll(async () => {
		await applyClusterScoped(`${RBAC}/clusterroles`, perSandboxRbac('ClusterRole'))
		await applyClusterScoped(`${RBAC}/clusterrolebindings`, perSandboxRbac('ClusterRoleBinding'))
		const [policy, binding] = editedFence()
		await applyClusterScoped(`${ADMISSION}/validatingadmissionpolicies`, policy)
		await applyClusterScoped(`${ADMISSION}/validatingadmissionpolicybindings`, binding)
		// The API server loads a new policy asynchronously: wait until it refuses an unprefixed name.
		const host = new KubeApi({ ...h.cluster.access, token: hostToken })
		await waitFor(
			'the admission policy in force',
			async () => {
				const probe = await host.send('POST', cnps(h.namespace), {
					body: {
						apiVersion: 'cilium.io/v2',
						kind: 'CiliumNetworkPolicy',
						metadata: { name: 'fence-probe' },
						spec: {},
					},
				})
				if (probe.status < 300) await h.cluster.api.remove(cnp(h.namespace, 'fence-probe'))
				return probe.status === 403 || probe.status === 422 ? true : undefined
			},
			{ timeoutMs: 30_000, intervalMs: 250 },
		)
	})

	it('R15-e2024bc-09/10/11/12/13/16/19/26: writes namzu-sbx-<claim uid> owned by the claim, selecting its own per-sandbox label, admitted with its replacement patch and read back equal', async () => {
		const sandbox = await providerAs(hostToken).create()
		h.open.push(sandbox)
		const claim = await claimOf(sandbox)
		const pod = await h.cluster.api.get<KubeObject>(paths.pod(h.namespace, sandbox.id))
		expect(pod.metadata.labels?.[LABEL_KEY]).toBe(claim.metadata.name)
		expect((claim.spec as Any).additionalPodMetadata.labels).toEqual({
			[LABEL_KEY]: claim.metadata.name,
		})

		await setPolicy(sandbox, { allowedHosts: ['API.Example.com', '.example.org'] })
		const name = `${PER_SANDBOX_POLICY_NAME_PREFIX}${claim.metadata.uid}`
		const written = await h.cluster.api.get<Any>(cnp(h.namespace, name))
		expect(written.metadata.ownerReferences).toEqual([
			{
				apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
				kind: 'SandboxClaim',
				name: claim.metadata.name,
				uid: claim.metadata.uid,
			},
		])
		expect(written.spec.endpointSelector).toEqual({
			matchLabels: { [LABEL_KEY]: claim.metadata.name },
		})
		expect(written.spec.egress[1]).toEqual({
			toFQDNs: [
				{ matchName: 'api.example.com' },
				{ matchName: 'example.org' },
				{ matchPattern: '*.example.org' },
			],
		})
		// The replacement: a 409 on the POST, then the merge-patch, admitted too.
		await setPolicy(sandbox, { allowedHosts: ['git.example.net'] })
		const replaced = await h.cluster.api.get<Any>(cnp(h.namespace, name))
		expect(replaced.spec.egress[1]).toEqual({ toFQDNs: [{ matchName: 'git.example.net' }] })
		expect((await policies()).filter((p) => p.metadata.name.startsWith('namzu-sbx-'))).toHaveLength(
			1,
		)
	})

	it('R15-e2024bc-27/28: the fence refuses every widened shape the host identity writes directly, and admits the exact body', async () => {
		const sandbox = await providerAs(hostToken).create()
		h.open.push(sandbox)
		const claim = await claimOf(sandbox)
		const other = { name: 'namzu-task-someone-else', uid: '00000000-0000-0000-0000-000000000000' }
		const host = new KubeApi({ ...h.cluster.access, token: hostToken })
		const edits: readonly [string, (body: Any) => void][] = [
			[
				'a name without the prefix',
				(b) => {
					b.metadata.name = `x-${claim.metadata.uid}`
				},
			],
			[
				'a name whose suffix is not the owner uid',
				(b) => {
					b.metadata.name = `namzu-sbx-${other.uid}`
				},
			],
			[
				'no owner',
				(b) => {
					delete b.metadata.ownerReferences
				},
			],
			[
				'a foreign owner kind',
				(b) => {
					b.metadata.ownerReferences[0].kind = 'Pod'
					b.metadata.ownerReferences[0].apiVersion = 'v1'
				},
			],
			[
				'blockOwnerDeletion: true',
				(b) => {
					b.metadata.ownerReferences[0].blockOwnerDeletion = true
				},
			],
			[
				'a two-label selector',
				(b) => {
					b.spec.endpointSelector.matchLabels.extra = 'x'
				},
			],
			[
				'a selector at another pod',
				(b) => {
					b.spec.endpointSelector.matchLabels[LABEL_KEY] = other.name
				},
			],
			[
				'the template label key with the owner name',
				(b) => {
					b.spec.endpointSelector = {
						matchLabels: { 'sandbox.namzu.ai/template': claim.metadata.name },
					}
				},
			],
			[
				"toFQDNs '*'",
				(b) => {
					b.spec.egress[1].toFQDNs = [{ matchPattern: '*' }]
				},
			],
			[
				"toFQDNs '*.*'",
				(b) => {
					b.spec.egress[1].toFQDNs = [{ matchPattern: '*.*' }]
				},
			],
			[
				"toFQDNs '*.com'",
				(b) => {
					b.spec.egress[1].toFQDNs = [{ matchPattern: '*.com' }]
				},
			],
			[
				'the kube-dns rule off port 53',
				(b) => {
					b.spec.egress[0].toPorts[0].ports[0].port = '5353'
				},
			],
			[
				'toEntities',
				(b) => {
					b.spec.egress.push({ toEntities: ['world'] })
				},
			],
			[
				'toCIDR',
				(b) => {
					b.spec.egress.push({ toCIDR: ['0.0.0.0/0'] })
				},
			],
			[
				'an ingress rule',
				(b) => {
					b.spec.ingress = [{ fromEntities: ['world'] }]
				},
			],
			[
				'a specs list',
				(b) => {
					b.specs = [{ endpointSelector: {}, egress: [{ toEntities: ['world'] }] }]
				},
			],
		]
		const admitted: string[] = []
		for (const [what, edit] of edits) {
			const body = validBody(claim)
			edit(body)
			const answer = await host.send('POST', cnps(h.namespace), { body })
			if (answer.status < 300) admitted.push(what)
			else {
				const text = JSON.stringify(answer.body)
				expect(text, what).toContain('ValidatingAdmissionPolicy')
				// Refused by a validation, never by an expression that failed to evaluate.
				expect(text, what).not.toMatch(/evaluat|compil|no such key|no such overload|no matching/i)
			}
		}
		expect(admitted, 'widened shapes the fence admitted').toEqual([])
		// The positive control: the exact body, then a widening patch of it, then an operator delete.
		const created = await host.send('POST', cnps(h.namespace), { body: validBody(claim) })
		expect(created.status).toBe(201)
		const name = `${PER_SANDBOX_POLICY_NAME_PREFIX}${claim.metadata.uid}`
		const widened = await host.send('PATCH', cnp(h.namespace, name), {
			body: { spec: { egress: [{ toEntities: ['world'] }] } },
			contentType: 'application/merge-patch+json',
		})
		expect(widened.status).toBeGreaterThanOrEqual(400)
		const deleted = await host.send('DELETE', cnp(h.namespace, OPERATOR_POLICY))
		expect(deleted.status).toBeGreaterThanOrEqual(400)
		expect(JSON.stringify(deleted.body)).toContain('ValidatingAdmissionPolicy')
		expect((await policies()).map((p) => p.metadata.name)).toContain(OPERATOR_POLICY)
	})

	it('R15-e2024bc-08: under rbac.yaml alone the write is refused with a 403 naming the verb', async () => {
		const role = manifestObjects('rbac.yaml').find((o) => o.kind === 'Role') as Any
		const token = await bindServiceAccount(h.cluster.api, h.namespace, 'plain-host', role.rules)
		await applyClusterScoped(`${RBAC}/clusterrolebindings`, {
			apiVersion: 'rbac.authorization.k8s.io/v1',
			kind: 'ClusterRoleBinding',
			metadata: { name: `plain-host-fence-reader-${h.namespace}` },
			roleRef: {
				apiGroup: 'rbac.authorization.k8s.io',
				kind: 'ClusterRole',
				name: 'namzu-sandbox-admission-fence-reader',
			},
			subjects: [{ kind: 'ServiceAccount', name: 'plain-host', namespace: h.namespace }],
		})
		const sandbox = await providerAs(token).create()
		h.open.push(sandbox)
		const refused = await rejection(setPolicy(sandbox, { allowedHosts: ['api.example.com'] }))
		expect(refused.error).toMatchObject({ status: 403 })
		expect(String((refused.error as Error).message)).toContain(
			'cannot create resource "ciliumnetworkpolicies"',
		)
	})

	it('R15-e2024bc-17/20/30: [] deletes only its own policy; a refused host sends nothing; deleting the claim collects its policy while the operator policy survives', async () => {
		const provider = providerAs(hostToken)
		const first = await provider.create()
		const second = await provider.create()
		h.open.push(first, second)
		await setPolicy(first, { allowedHosts: ['a.example.com'] })
		await setPolicy(second, { allowedHosts: ['b.example.com'] })
		const firstName = `${PER_SANDBOX_POLICY_NAME_PREFIX}${(await claimOf(first)).metadata.uid}`
		const secondClaim = await claimOf(second)
		const secondName = `${PER_SANDBOX_POLICY_NAME_PREFIX}${secondClaim.metadata.uid}`
		const refused = await rejection(setPolicy(first, { allowedHosts: ['https://a.example.com/'] }))
		expect(refused.error).toBeInstanceOf(KubernetesNetworkPolicyHostError)
		expect(refused.error).toMatchObject({ problem: 'url', index: 0 })

		await setPolicy(first, { allowedHosts: [] })
		const names = (await policies()).map((p) => p.metadata.name)
		expect(names).not.toContain(firstName)
		expect(names).toEqual(expect.arrayContaining([secondName, OPERATOR_POLICY]))

		const started = performance.now()
		await second.destroy()
		await waitGone(h.cluster.api, cnp(h.namespace, secondName), {
			timeoutMs: 30_000,
			intervalMs: 20,
		})
		console.info(
			`per-sandbox policy collected ${Math.round(performance.now() - started)} ms after destroy()`,
		)
		expect((await policies()).map((p) => p.metadata.name)).toEqual([OPERATOR_POLICY])
	})

	it('R15-e2024bc-29: concurrent claims, as many as the warm pool holds, write distinct policies, each selecting its own pod', async () => {
		const provider = providerAs(hostToken)
		const sandboxes = await Promise.all(Array.from({ length: replicas }, () => provider.create()))
		h.open.push(...sandboxes)
		await Promise.all(
			sandboxes.map((sandbox, index) =>
				setPolicy(sandbox, { allowedHosts: [`h${index}.example.com`] }),
			),
		)
		for (const [index, sandbox] of sandboxes.entries()) {
			const claim = await claimOf(sandbox)
			const written = await h.cluster.api.get<Any>(
				cnp(h.namespace, `${PER_SANDBOX_POLICY_NAME_PREFIX}${claim.metadata.uid}`),
			)
			expect(written.spec.endpointSelector.matchLabels).toEqual({
				[LABEL_KEY]: claim.metadata.name,
			})
			expect(written.spec.egress[1]).toEqual({ toFQDNs: [{ matchName: `h${index}.example.com` }] })
		}
		const own = (await policies()).filter((p) => p.metadata.name.startsWith('namzu-sbx-'))
		expect(own).toHaveLength(replicas)
	})

	it('R15-29493a3-03: under rbac.yaml alone a cilium-engine backend reads its applied CiliumNetworkPolicy and creates', async () => {
		const role = manifestObjects('rbac.yaml').find((o) => o.kind === 'Role') as Any
		const token = await bindServiceAccount(h.cluster.api, h.namespace, 'cilium-reader', role.rules)
		const egress: KubernetesEgressConfig = {
			engine: 'cilium',
			verify: 'named-object-only',
			networkPolicyName: 'cilium-static-egress',
			policy: { kind: 'static', allowedHosts: ['api.example.com'] },
		}
		const resolved = resolveKubernetesBackendConfig({ ...h.config(), egress })
		if (!resolved.egress) throw new Error('no egress')
		await h.cluster.api.create(
			cnps(h.namespace),
			translatedPolicyObject(
				translateEgressPolicy(resolved.egress, templateName, ['api.example.com']),
				h.namespace,
			),
		)
		const sandbox = await providerAs(token, egress).create()
		h.open.push(sandbox)
		expect('setNetworkPolicy' in sandbox).toBe(false)
		await h.cluster.api.remove(cnp(h.namespace, 'cilium-static-egress'))
	})

	it('R15-e2024bc-01: without egress.perSandbox the method is absent and no policy or admission request is sent', async () => {
		proxy.clear()
		const sandbox = await h
			.provider({
				access: { server: proxy.server, getToken: async () => hostToken },
				egress: denyAll,
			})
			.create()
		h.open.push(sandbox)
		expect('setNetworkPolicy' in sandbox).toBe(false)
		await sandbox.destroy()
		const touched = proxy.requests.filter(
			(line) =>
				line.includes('admissionregistration') ||
				(line.includes('ciliumnetworkpolicies') && !line.startsWith('GET')),
		)
		expect(touched).toEqual([])
	})
})
