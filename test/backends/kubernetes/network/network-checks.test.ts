// The network checks' request discipline against a recording, scripted API port: the named object
// GET once per backend and a failure retried, no request at all when every check is off, the LIST
// only under union or ingress, a union pass cached per label set for five minutes and a failure
// never; and where the acquire runs them — before a direct POST (a refusal POSTs nothing), after a
// claim binds (a refusal releases the claim) — plus the profile label on what is sent and read.
import { describe, expect, it } from 'vitest'
import { acquireTaskSandbox } from '../../../../src/backends/kubernetes/acquire-task-sandbox.js'
import {
	type KubernetesBackendConfig,
	resolveKubernetesBackendConfig,
} from '../../../../src/backends/kubernetes/kubernetes-backend-config.js'
import {
	translatedPolicyObject,
	translateEgressPolicy,
} from '../../../../src/backends/kubernetes/network/egress-translation.js'
import {
	KubernetesNetworkVerifier,
	UNION_PASS_TTL_MS,
} from '../../../../src/backends/kubernetes/network/network-verifier.js'
import {
	KubernetesAcquireError,
	type KubernetesEgressConfig,
	KubernetesEgressPolicyMismatchError,
	KubernetesEgressPolicyNotAppliedError,
	KubernetesEgressPolicyUnionError,
	KubernetesIngressPolicyError,
	KubernetesPodLabelNotObservedError,
	KubernetesPodLabelsRejectedError,
} from '../../../../src/index.js'
import { rejectionError } from '../error-chain.js'
import { pendingClaim, pod, readyClaim, scriptedApi, statusError } from '../scripted-api-port.js'

const ns = 'sandboxes'
const nps = `/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`
const cnps = `/apis/cilium.io/v2/namespaces/${ns}/ciliumnetworkpolicies`
const labels = { 'sandbox.namzu.ai/template': 'task' }
const base: KubernetesBackendConfig = {
	tier: 'microvm',
	service: 'kubernetes',
	namespace: ns,
	access: { server: 'https://127.0.0.1:1', getToken: () => 't' },
	sandboxTemplateName: 'task',
	readyPollIntervalMs: 5,
	readyTimeoutMs: 300,
}
const config = (overrides: Partial<KubernetesBackendConfig> = {}) =>
	resolveKubernetesBackendConfig({ ...base, ...overrides })

function applied(egress: KubernetesEgressConfig): object {
	const resolved = config({ egress }).egress
	if (!resolved) throw new Error('no egress')
	return translatedPolicyObject(translateEgressPolicy(resolved, 'task'), ns)
}

const ingressPolicy = {
	metadata: { name: 'namzu-sandbox-ingress' },
	spec: {
		podSelector: { matchLabels: labels },
		policyTypes: ['Ingress'],
		ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.1/32' } }], ports: [{ port: 1024 }] }],
	},
}

function verifier(
	overrides: Partial<KubernetesBackendConfig>,
	answer: (verb: string, path: string) => unknown,
	now?: () => number,
) {
	const resolved = config(overrides)
	const api = scriptedApi((call) => answer(call.verb, call.path))
	const checks = new KubernetesNetworkVerifier({
		api: api.port,
		namespace: ns,
		sandboxTemplateName: 'task',
		agentPort: 1024,
		...(resolved.egress ? { egress: resolved.egress } : {}),
		ingress: resolved.ingress,
		...(now ? { now } : {}),
	})
	return { api, checks }
}

const denyAll: KubernetesEgressConfig = { policy: { kind: 'deny-all' } }

describe('the network checks', () => {
	it('issue no request at all without egress and with ingress unverified', async () => {
		const { api, checks } = verifier({ ingress: 'unverified' }, () => {
			throw new Error('no request expected')
		})
		expect(checks.active).toBe(false)
		await checks.verify(labels)
		expect(api.log()).toEqual([])
	})

	it('without egress: one LIST of networkpolicies for the ingress check, no policy GET', async () => {
		const { api, checks } = verifier({}, () => ({ items: [ingressPolicy] }))
		await checks.verify(labels)
		expect(api.log()).toEqual([`LIST ${nps}`])
	})

	it('GET the named object once per backend, then LIST on each create (the union pass is cached, the ingress check is not)', async () => {
		const { api, checks } = verifier({ egress: denyAll }, (verb) =>
			verb === 'GET' ? applied(denyAll) : { items: [applied(denyAll), ingressPolicy] },
		)
		await checks.verify(labels)
		await checks.verify(labels)
		expect(api.log()).toEqual([`GET ${nps}/task-egress`, `LIST ${nps}`, `LIST ${nps}`])
	})

	it('named-object-only with ingress unverified: exactly one GET, no LIST', async () => {
		const egress: KubernetesEgressConfig = { ...denyAll, verify: 'named-object-only' }
		const { api, checks } = verifier({ egress, ingress: 'unverified' }, () => applied(denyAll))
		await checks.verify(labels)
		await checks.verify(labels)
		expect(api.log()).toEqual([`GET ${nps}/task-egress`])
	})

	it('refuses a 404 with KubernetesEgressPolicyNotAppliedError and retries the GET on the next create', async () => {
		let present = false
		const { api, checks } = verifier({ egress: denyAll, ingress: 'unverified' }, (verb, path) => {
			if (verb === 'GET' && !present) throw statusError('GET', path, 404)
			return verb === 'GET' ? applied(denyAll) : { items: [applied(denyAll)] }
		})
		const error = await rejectionError(checks.verify(labels))
		expect(error).toBeInstanceOf(KubernetesEgressPolicyNotAppliedError)
		expect(error).toMatchObject({ policyName: 'task-egress', policyKind: 'NetworkPolicy' })
		present = true
		await checks.verify(labels)
		expect(api.log().filter((line) => line.startsWith('GET'))).toHaveLength(2)
	})

	it('refuses a drifted object with KubernetesEgressPolicyMismatchError naming the field', async () => {
		const drifted = applied(denyAll) as { spec: { egress: { ports: { port: number }[] }[] } }
		const spec = structuredClone(drifted.spec)
		const first = spec.egress[0]?.ports[1]
		if (first) first.port = 5353
		const { checks } = verifier({ egress: denyAll }, () => ({ ...drifted, spec }))
		const error = await rejectionError(checks.verify(labels))
		expect(error).toBeInstanceOf(KubernetesEgressPolicyMismatchError)
		expect(error).toMatchObject({
			field: 'spec.egress[0].ports[1].port',
			expected: '53',
			actual: '5353',
		})
	})

	it('refuses a profile whose applied policy still selects on the template label alone (mismatch on the selector)', async () => {
		const egress: KubernetesEgressConfig = { ...denyAll, profile: 'none' }
		const stale = { ...(applied(denyAll) as object), metadata: { name: 'task-none-egress' } }
		const { api, checks } = verifier({ egress }, () => stale)
		const error = await rejectionError(checks.verify(labels))
		expect(error).toBeInstanceOf(KubernetesEgressPolicyMismatchError)
		expect((error as KubernetesEgressPolicyMismatchError).field).toContain(
			'spec.podSelector.matchLabels',
		)
		expect(api.log()).toEqual([`GET ${nps}/task-none-egress`])
	})

	it('caches a union pass per label set for at most five minutes, and never a failure', async () => {
		let clock = 0
		let widened = false
		const wide = {
			metadata: { name: 'wide' },
			spec: { podSelector: {}, policyTypes: ['Egress'], egress: [{}] },
		}
		const { api, checks } = verifier(
			{ egress: denyAll, ingress: 'unverified' },
			(verb) =>
				verb === 'GET'
					? applied(denyAll)
					: { items: widened ? [applied(denyAll), wide] : [applied(denyAll)] },
			() => clock,
		)
		await checks.verify(labels)
		await checks.verify(labels) // cached: no LIST
		await checks.verify({ ...labels, other: 'x' }) // another label set: LISTs
		expect(api.log().filter((line) => line.startsWith('LIST'))).toHaveLength(2)
		widened = true
		clock += UNION_PASS_TTL_MS - 1
		await checks.verify(labels) // still inside five minutes
		clock += 1
		const error = await rejectionError(checks.verify(labels))
		expect(error).toBeInstanceOf(KubernetesEgressPolicyUnionError)
		expect(error).toMatchObject({ refusal: 'policy-widens-egress', podLabels: labels })
		expect((error as Error).message.startsWith('egress refused')).toBe(true)
		widened = false
		await checks.verify(labels) // the failure was not remembered
		expect(api.log().filter((line) => line.startsWith('LIST'))).toHaveLength(4)
	})

	it('reports a LIST refused (403) as an unread source naming the verb, and a 404 as unserved', async () => {
		const egress: KubernetesEgressConfig = {
			engine: 'cilium',
			policy: { kind: 'static', allowedHosts: [] },
		}
		const { checks } = verifier({ egress, ingress: { engine: 'cilium' } }, (verb, path) => {
			if (verb === 'GET') return applied(egress)
			if (path === nps) throw statusError('GET', path, 403)
			throw statusError('GET', path, 404)
		})
		const error = await rejectionError(checks.verify(labels))
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
				{
					resource: 'ciliumnetworkpolicies',
					apiGroup: 'cilium.io',
					status: 'unserved',
					verb: 'list',
				},
			],
		})
		expect((error as Error).message).toContain("grant verb 'list'")
	})

	it('refuses an ingress check on a namespace without policy with KubernetesIngressPolicyError, distinct from egress refusals', async () => {
		const { checks } = verifier({}, () => ({ items: [] }))
		const error = await rejectionError(checks.verify(labels))
		expect(error).toBeInstanceOf(KubernetesIngressPolicyError)
		expect(error).not.toBeInstanceOf(KubernetesEgressPolicyUnionError)
		expect(error).toMatchObject({
			refusal: 'no-ingress-policy',
			port: 1024,
			podLabels: labels,
			unread: [],
		})
		expect((error as Error).message.startsWith('ingress refused')).toBe(true)
	})

	it('reports an ingress LIST refused (403) in unread, and names the verb to grant rather than a policy to apply', async () => {
		const { checks } = verifier({}, (_verb, path) => {
			throw statusError('GET', path, 403)
		})
		const error = await rejectionError(checks.verify(labels))
		expect(error).toBeInstanceOf(KubernetesIngressPolicyError)
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
		expect((error as Error).message).not.toContain('networkpolicy.yaml')
	})

	it('requires every configured narrowing element: an applied CiliumNetworkPolicy without the toPorts is a mismatch naming it', async () => {
		const egress: KubernetesEgressConfig = {
			engine: 'cilium',
			policy: { kind: 'static', allowedHosts: ['a.example'] },
			ciliumNarrowing: { ports: [443] },
		}
		const resolved = config({ egress }).egress
		if (!resolved) throw new Error('no egress')
		const unnarrowed = translatedPolicyObject(
			translateEgressPolicy({ ...resolved, narrowing: undefined }, 'task', ['a.example']),
			ns,
		)
		const { api, checks } = verifier({ egress, ingress: 'unverified' }, () => unnarrowed)
		const error = await rejectionError(checks.verify(labels))
		expect(error).toBeInstanceOf(KubernetesEgressPolicyMismatchError)
		expect(error).toMatchObject({
			policyKind: 'CiliumNetworkPolicy',
			field: 'spec.egress[1].toPorts',
		})
		expect(api.log()).toEqual([`GET ${cnps}/task-egress`])
	})

	it('LISTs ciliumnetworkpolicies under the ingress cilium engine', async () => {
		const { api, checks } = verifier({ ingress: { engine: 'cilium' } }, (_verb, path) => ({
			items: path === nps ? [ingressPolicy] : [],
		}))
		await checks.verify(labels)
		expect(api.log()).toEqual([`LIST ${nps}`, `LIST ${cnps}`])
	})
})

const template = {
	metadata: { name: 'task' },
	spec: { podTemplate: { metadata: { labels: { app: 'x' } }, spec: { containers: [] } } },
}

describe('where the acquire runs the checks', () => {
	it('claim: the named egress object is read before the claim is POSTed; a refusal creates nothing', async () => {
		const api = scriptedApi(() => ({}))
		const error = await rejectionError(
			acquireTaskSandbox({
				api: api.port,
				config: config({ warmPoolName: 'pool', egress: denyAll }),
				network: {
					prepare: async () => {
						throw new KubernetesEgressPolicyNotAppliedError('NetworkPolicy', 'task-egress', ns)
					},
					verify: async () => {},
				},
			}),
		)
		expect(error).toBeInstanceOf(KubernetesEgressPolicyNotAppliedError)
		expect(api.log()).toEqual([])
	})

	it('direct Sandbox: before the POST, with the labels the pod will carry; a refusal POSTs nothing', async () => {
		const seen: Record<string, string>[] = []
		const api = scriptedApi((call) => (call.verb === 'GET' ? template : call.body))
		const refusal = new KubernetesIngressPolicyError({
			refusal: 'no-ingress-policy',
			namespace: ns,
			podLabels: {},
			port: 1024,
			examined: [],
			unread: [],
		})
		const error = await rejectionError(
			acquireTaskSandbox({
				api: api.port,
				config: config({ egress: { ...denyAll, profile: 'none' } }),
				network: {
					prepare: async () => {},
					verify: async (podLabels) => {
						seen.push({ ...podLabels })
						throw refusal
					},
				},
			}),
		)
		expect(error).toBe(refusal)
		// Never an HTTP proxy as a stand-in for a policy.
		expect(JSON.stringify(api.calls)).not.toMatch(/HTTPS?_PROXY/i)
		expect(seen).toEqual([
			{ app: 'x', 'sandbox.namzu.ai/egress-profile': 'none', 'sandbox.namzu.ai/template': 'task' },
		])
		expect(api.log().filter((line) => !line.startsWith('GET'))).toEqual([])
	})

	it('claim: after the bind, with the bound pod’s real labels; a refusal deletes the claim', async () => {
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') return call.body
			if (call.verb === 'DELETE') return {}
			if (call.path.includes('/sandboxclaims/')) return readyClaim('pool-a')
			return {
				...pod('uid-1', '10.0.0.7'),
				metadata: { name: 'pool-a', uid: 'uid-1', labels: { pooled: 'yes' } },
			}
		})
		const seen: Record<string, string>[] = []
		const error = await rejectionError(
			acquireTaskSandbox({
				api: api.port,
				config: config({ warmPoolName: 'pool' }),
				network: {
					prepare: async () => {},
					verify: async (podLabels) => {
						seen.push({ ...podLabels })
						throw new Error('refused')
					},
				},
			}),
		)
		expect((error as Error).message).toBe('refused')
		expect(seen).toEqual([{ pooled: 'yes' }])
		expect(api.log().at(-1)).toMatch(/^DELETE .*sandboxclaims\//)
	})

	it('a profile rides in the claim additionalPodMetadata; a bound pod without it is refused and the claim released', async () => {
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') return call.body
			if (call.verb === 'DELETE') return {}
			if (call.path.includes('/sandboxclaims/')) return readyClaim('pool-a')
			return pod('uid-1', '10.0.0.7')
		})
		const error = await rejectionError(
			acquireTaskSandbox({
				api: api.port,
				config: config({ warmPoolName: 'pool', egress: { ...denyAll, profile: 'internet' } }),
			}),
		)
		expect(error).toBeInstanceOf(KubernetesPodLabelNotObservedError)
		expect(error).toMatchObject({
			labelKey: 'sandbox.namzu.ai/egress-profile',
			expected: 'internet',
		})
		expect(api.calls[0]?.body).toMatchObject({
			spec: {
				additionalPodMetadata: { labels: { 'sandbox.namzu.ai/egress-profile': 'internet' } },
			},
		})
		expect(api.log().at(-1)).toMatch(/^DELETE .*sandboxclaims\//)
	})

	it('without a profile the claim body carries no additionalPodMetadata', async () => {
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') return call.body
			if (call.path.includes('/sandboxclaims/')) return readyClaim('pool-a')
			return pod('uid-1', '10.0.0.7')
		})
		await acquireTaskSandbox({ api: api.port, config: config({ warmPoolName: 'pool' }) })
		const body = api.calls[0]?.body as { spec: object } | undefined
		expect(body?.spec).not.toHaveProperty('additionalPodMetadata')
	})

	it('InvalidMetadata stays claim-rejected, with KubernetesPodLabelsRejectedError as its cause', async () => {
		const api = scriptedApi((call) => {
			if (call.verb === 'POST') return call.body
			if (call.verb === 'DELETE') return {}
			return pendingClaim('InvalidMetadata', 'label key not allowed')
		})
		const error = await rejectionError(
			acquireTaskSandbox({
				api: api.port,
				config: config({ warmPoolName: 'pool', egress: { ...denyAll, profile: 'none' } }),
			}),
		)
		expect(error).toBeInstanceOf(KubernetesAcquireError)
		expect(error).toMatchObject({ reason: 'claim-rejected', retryable: false })
		const cause = (error as Error).cause
		expect(cause).toBeInstanceOf(KubernetesPodLabelsRejectedError)
		expect(cause).toMatchObject({
			requestedPodLabels: { 'sandbox.namzu.ai/egress-profile': 'none' },
			profileLabelKey: 'sandbox.namzu.ai/egress-profile',
		})
	})
})
