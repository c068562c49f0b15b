// The network checks against objects really stored in the harness API server: the agent-port
// ingress check failing on a namespace without a policy and passing with one; the egress named
// object and the union (a second widening policy, named-object-only restoring the single check,
// a Role without `list`); the controller-managed template policy refused after a claim binds (the
// claim released); an egress profile carried by a claim onto the bound pod. Each refusal beside
// its positive control, and a refused direct create leaves no Sandbox behind.
import { afterEach, describe, expect, it } from 'vitest'
import { resolveKubernetesBackendConfig } from '../../../src/backends/kubernetes/kubernetes-backend-config.js'
import {
	translatedPolicyObject,
	translateEgressPolicy,
} from '../../../src/backends/kubernetes/network/egress-translation.js'
import {
	KubernetesAcquireError,
	type KubernetesBackendConfig,
	type KubernetesEgressConfig,
	KubernetesEgressPolicyMismatchError,
	KubernetesEgressPolicyNotAppliedError,
	KubernetesEgressPolicyUnionError,
	KubernetesIngressPolicyError,
	KubernetesPodLabelsRejectedError,
} from '../../../src/index.js'
import { type KubeObject, listItems } from '../../cluster/cluster-objects.js'
import {
	agentIngressPolicy,
	paths,
	sandboxTemplate,
	warmPool,
} from '../../cluster/sandbox-fixtures.js'
import { waitFor } from '../../cluster/wait-for.js'
import { rejection } from './error-chain.js'
import {
	ingressPolicyName,
	listClaims,
	listSandboxes,
	templateName,
	useKubernetesHarness,
	waitPoolReady,
} from './kubernetes-harness.js'
import { bindServiceAccount } from './service-account.js'

const h = useKubernetesHarness({ namespacePrefix: 'k8s-net', withoutIngressPolicy: true })
const created: string[] = []

/** Creates a NetworkPolicy in the harness namespace, removed after the test. */
async function apply(policy: Record<string, unknown>): Promise<void> {
	await h.cluster.api.create(paths.networkPolicies(h.namespace), policy)
	const name = (policy.metadata as { name: string }).name
	created.push(name)
}

afterEach(async () => {
	for (const name of created.splice(0)) {
		await h.cluster.api.remove(paths.networkPolicy(h.namespace, name)).catch(() => {})
	}
})

function translated(egress: KubernetesEgressConfig, template = templateName) {
	const resolved = resolveKubernetesBackendConfig({
		...h.config(),
		sandboxTemplateName: template,
		egress,
	})
	if (!resolved.egress) throw new Error('no egress')
	return translatedPolicyObject(translateEgressPolicy(resolved.egress, template), h.namespace)
}

const gatewayCidr = () => `${h.cluster.kubelet.network.gateway}/32`
const denyAll: KubernetesEgressConfig = { policy: { kind: 'deny-all' } }
const widening = {
	apiVersion: 'networking.k8s.io/v1',
	kind: 'NetworkPolicy',
	metadata: { name: 'placeholder-open' },
	spec: {
		podSelector: {},
		policyTypes: ['Egress'],
		egress: [{ to: [{ ipBlock: { cidr: '0.0.0.0/0' } }] }],
	},
}

async function liveSandboxNames(): Promise<string[]> {
	return (await listSandboxes(h.cluster, h.namespace))
		.filter((sandbox) => sandbox.metadata.deletionTimestamp === undefined)
		.map((sandbox) => sandbox.metadata.name)
}

describe('the network checks on the harness API server', () => {
	it('refuses a direct create on a namespace without an ingress policy, leaving no Sandbox; passes once one is applied', async () => {
		const before = await liveSandboxNames()
		const { error } = await rejection(h.provider().create())
		expect(error).toBeInstanceOf(KubernetesIngressPolicyError)
		expect(error).toMatchObject({ refusal: 'no-ingress-policy', port: 7070, unread: [] })
		expect(await liveSandboxNames()).toEqual(before)

		await apply(agentIngressPolicy(ingressPolicyName, templateName, gatewayCidr()))
		const sandbox = await h.provider().create()
		h.open.push(sandbox)
		expect(await sandbox.exec('true')).toMatchObject({ exitCode: 0 })
	})

	it('refuses an applied ingress rule open to every pod of the namespace beside the closed one', async () => {
		await apply(agentIngressPolicy(ingressPolicyName, templateName, gatewayCidr()))
		await apply({
			apiVersion: 'networking.k8s.io/v1',
			kind: 'NetworkPolicy',
			metadata: { name: 'open-to-namespace' },
			spec: {
				podSelector: {},
				policyTypes: ['Ingress'],
				ingress: [{ from: [{ podSelector: {} }] }],
			},
		})
		const { error } = await rejection(h.provider().create())
		expect(error).toBeInstanceOf(KubernetesIngressPolicyError)
		expect(error).toMatchObject({ refusal: 'agent-port-open' })
		expect((error as KubernetesIngressPolicyError).examined).toContainEqual(
			expect.objectContaining({ name: 'open-to-namespace', verdict: 'opens-agent-port' }),
		)
	})

	it('egress deny-all: refuses before the policy is applied, passes with the translation applied, refuses a second widening policy (union), and named-object-only accepts it', async () => {
		await apply(agentIngressPolicy(ingressPolicyName, templateName, gatewayCidr()))
		const untouched = await liveSandboxNames()
		const missing = await rejection(h.provider({ egress: denyAll }).create())
		expect(missing.error).toBeInstanceOf(KubernetesEgressPolicyNotAppliedError)
		expect(await liveSandboxNames()).toEqual(untouched)

		await apply(translated(denyAll))
		const passing = await h.provider({ egress: denyAll }).create()
		h.open.push(passing)

		await apply(widening)
		const before = await liveSandboxNames()
		const { error } = await rejection(h.provider({ egress: denyAll }).create())
		expect(error).toBeInstanceOf(KubernetesEgressPolicyUnionError)
		expect(error).toMatchObject({ refusal: 'policy-widens-egress' })
		expect((error as KubernetesEgressPolicyUnionError).examined).toEqual(
			expect.arrayContaining([
				expect.objectContaining({ name: 'placeholder-open', verdict: 'widens-egress' }),
				expect.objectContaining({ name: `${templateName}-egress`, verdict: 'within-translation' }),
			]),
		)
		expect(await liveSandboxNames()).toEqual(before)

		const accepted = await h
			.provider({ egress: { ...denyAll, verify: 'named-object-only' } })
			.create()
		h.open.push(accepted)
	})

	it('refuses a drifted named object, naming the field', async () => {
		await apply(agentIngressPolicy(ingressPolicyName, templateName, gatewayCidr()))
		const policy = translated(denyAll) as { spec: { egress: unknown[] } }
		await apply({ ...policy, spec: { ...policy.spec, egress: [...policy.spec.egress, {}] } })
		const { error } = await rejection(h.provider({ egress: denyAll }).create())
		expect(error).toBeInstanceOf(KubernetesEgressPolicyMismatchError)
		expect(error).toMatchObject({ field: 'spec.egress[1]' })
	})

	it('a Role with get but no list on networkpolicies: not-evaluable naming the verb; with list it passes', async () => {
		await apply(agentIngressPolicy(ingressPolicyName, templateName, gatewayCidr()))
		await apply(translated(denyAll))
		const direct = [
			{
				apiGroups: ['extensions.agents.x-k8s.io'],
				resources: ['sandboxtemplates'],
				verbs: ['get'],
			},
			{
				apiGroups: ['agents.x-k8s.io'],
				resources: ['sandboxes'],
				verbs: ['create', 'get', 'patch', 'delete'],
			},
			{ apiGroups: [''], resources: ['pods'], verbs: ['get'] },
		] as const
		const access = (token: string): KubernetesBackendConfig['access'] => ({
			server: h.cluster.access.server,
			...(h.cluster.access.caPem === undefined ? {} : { ca: h.cluster.access.caPem }),
			getToken: async () => token,
		})
		const noList = await bindServiceAccount(h.cluster.api, h.namespace, 'net-nolist', [
			...direct,
			{ apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ['get'] },
		])
		const { error } = await rejection(
			h.provider({ access: access(noList), egress: denyAll }).create(),
		)
		expect(error).toBeInstanceOf(KubernetesEgressPolicyUnionError)
		expect(error).toMatchObject({
			refusal: 'not-evaluable',
			unread: [
				{
					resource: 'networkpolicies',
					apiGroup: 'networking.k8s.io',
					status: 'forbidden',
					verb: 'list',
				},
			],
		})
		expect((error as Error).message).toContain("grant verb 'list'")

		const withList = await bindServiceAccount(h.cluster.api, h.namespace, 'net-list', [
			...direct,
			{ apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ['get', 'list'] },
		])
		const sandbox = await h.provider({ access: access(withList), egress: denyAll }).create()
		h.open.push(sandbox)
	})
})

describe('a claimed sandbox under the controller-managed template policy', () => {
	const managedTemplate = 'managed-template'
	const managedPool = 'managed-pool'

	it('is refused after the bind (the managed default opens the internet) and the claim is released; under allow-all it passes', async () => {
		const template = sandboxTemplate(managedTemplate) as { spec: Record<string, unknown> }
		// Managed with no networkPolicy block: the controller writes its internet-wide default.
		const { networkPolicyManagement: _unmanaged, ...managedSpec } = template.spec
		await h.cluster.api.create(paths.templates(h.namespace), { ...template, spec: managedSpec })
		// The managed policy admits only the controller's router: the host needs its own way in
		// (the harness kubelet enforces it, and its readiness probe dials from the host).
		await apply(agentIngressPolicy('managed-ingress', managedTemplate, gatewayCidr()))
		await h.cluster.api.create(paths.pools(h.namespace), warmPool(managedPool, managedTemplate, 1))
		await waitPoolReady(h.cluster, h.namespace, managedPool, 1)
		const managedPolicy = await waitFor('the controller-managed template policy', async () => {
			const items = await listItems(h.cluster.api, paths.networkPolicies(h.namespace))
			return items.find(
				(item: KubeObject) => item.metadata.name === `${managedTemplate}-network-policy`,
			)
		})
		expect(managedPolicy.spec).toMatchObject({ policyTypes: ['Ingress', 'Egress'] })

		await apply(translated(denyAll, managedTemplate))
		const config = {
			sandboxTemplateName: managedTemplate,
			warmPoolName: managedPool,
			egress: denyAll,
		}
		const { error } = await rejection(h.provider(config).create())
		expect(error).toBeInstanceOf(KubernetesEgressPolicyUnionError)
		expect(error).toMatchObject({ refusal: 'policy-widens-egress' })
		expect((error as KubernetesEgressPolicyUnionError).examined).toContainEqual(
			expect.objectContaining({
				name: `${managedTemplate}-network-policy`,
				verdict: 'widens-egress',
			}),
		)
		await waitFor('the refused claim released', async () =>
			(await listClaims(h.cluster, h.namespace)).every(
				(claim) => claim.metadata.deletionTimestamp !== undefined,
			)
				? true
				: undefined,
		)
		// Positive control: the same claim path under an egress the managed policy stays inside.
		const allowAll: KubernetesEgressConfig = {
			policy: { kind: 'allow-all' },
			networkPolicyName: `${managedTemplate}-egress-open`,
		}
		await apply(translated(allowAll, managedTemplate))
		await waitPoolReady(h.cluster, h.namespace, managedPool, 1)
		const sandbox = await h.provider({ ...config, egress: allowAll }).create()
		h.open.push(sandbox)
	})
})

describe('an egress profile on a claim', () => {
	it('rides onto the bound pod under an allowed key; a key outside the allowed domains is claim-rejected with KubernetesPodLabelsRejectedError as the cause', async () => {
		const pool = 'profile-pool'
		await h.cluster.api.create(paths.pools(h.namespace), warmPool(pool, templateName, 1))
		await waitPoolReady(h.cluster, h.namespace, pool, 1)
		await apply(agentIngressPolicy(ingressPolicyName, templateName, gatewayCidr()))
		const egress: KubernetesEgressConfig = {
			...denyAll,
			profile: 'none',
			profileLabelKey: 'sandbox.users.io/egress-profile',
		}
		await apply(translated(egress))
		const sandbox = await h.provider({ warmPoolName: pool, egress }).create()
		h.open.push(sandbox)
		const pod = await h.cluster.api.get<KubeObject>(paths.pod(h.namespace, sandbox.id))
		expect(pod.metadata.labels?.['sandbox.users.io/egress-profile']).toBe('none')

		await waitPoolReady(h.cluster, h.namespace, pool, 1)
		// The default key: its own applied policy (the named check runs before the claim is POSTed).
		const disallowed: KubernetesEgressConfig = {
			...denyAll,
			profile: 'none',
			networkPolicyName: 'default-key-egress',
		}
		await apply(translated(disallowed))
		const refused = await rejection(h.provider({ warmPoolName: pool, egress: disallowed }).create())
		expect(refused.error).toBeInstanceOf(KubernetesAcquireError)
		expect(refused.error).toMatchObject({ reason: 'claim-rejected', retryable: false })
		const cause = (refused.error as Error).cause
		expect(cause).toBeInstanceOf(KubernetesPodLabelsRejectedError)
		expect(cause).toMatchObject({
			requestedPodLabels: { 'sandbox.namzu.ai/egress-profile': 'none' },
		})
	})
})
