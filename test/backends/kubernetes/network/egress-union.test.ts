// The union check's decision, table-driven over real policy shapes: which policies select the pod
// (its labels, never a name), what widens each translation, what is not evaluable, and when nothing
// bounds the pod at all. Conservative: only what can be placed inside passes.
import { describe, expect, it } from 'vitest'
import { resolveKubernetesBackendConfig } from '../../../../src/backends/kubernetes/kubernetes-backend-config.js'
import {
	translatedPolicyObject,
	translateEgressPolicy,
} from '../../../../src/backends/kubernetes/network/egress-translation.js'
import { decideEgressUnion } from '../../../../src/backends/kubernetes/network/egress-union.js'
import {
	readCiliumPolicy,
	readNetworkPolicy,
} from '../../../../src/backends/kubernetes/network/policy-model.js'
import type { KubernetesEgressConfig, UnreadPolicySource } from '../../../../src/index.js'

const podLabels = { 'sandbox.namzu.ai/template': 'task', app: 'sandbox' }

function translation(egress: KubernetesEgressConfig, hosts: readonly string[] = []) {
	const resolved = resolveKubernetesBackendConfig({
		tier: 'microvm',
		service: 'kubernetes',
		namespace: 'ns',
		access: { server: 'https://127.0.0.1:1', getToken: () => 't' },
		sandboxTemplateName: 'task',
		egress,
	}).egress
	if (!resolved) throw new Error('no egress')
	return translateEgressPolicy(resolved, 'task', hosts)
}

const np = (name: string, spec: object) => ({ metadata: { name }, spec })
const cnp = (name: string, spec: object) => ({ metadata: { name }, spec })
const selectAll = { podSelector: {} }

function decide(
	egress: KubernetesEgressConfig,
	items: { core?: object[]; cilium?: object[] },
	options: {
		hosts?: readonly string[]
		unread?: UnreadPolicySource[]
		withTranslation?: boolean
	} = {},
) {
	const translated = translation(egress, options.hosts)
	const own = options.withTranslation === false ? [] : [translatedPolicyObject(translated, 'ns')]
	const policies = [
		...[...(translated.kind === 'NetworkPolicy' ? own : []), ...(items.core ?? [])].map(
			readNetworkPolicy,
		),
		...[...(translated.kind === 'CiliumNetworkPolicy' ? own : []), ...(items.cilium ?? [])].map(
			readCiliumPolicy,
		),
	]
	return decideEgressUnion({
		policies,
		podLabels,
		namespace: 'ns',
		allowance: translated.allowance,
		unread: options.unread ?? [],
	})
}

const denyAll: KubernetesEgressConfig = { policy: { kind: 'deny-all' } }
const internetRule = { to: [{ ipBlock: { cidr: '0.0.0.0/0' } }] }

describe('the egress union decision', () => {
	it.each([
		['deny-all', denyAll],
		['allow-all', { policy: { kind: 'allow-all' } }],
		['no-network', { policy: { kind: 'no-network' } }],
		['public-internet', { policy: { kind: 'public-internet', exceptCidrs: ['203.0.113.0/24'] } }],
	] as const)('passes the %s translation alone', (_kind, egress) => {
		expect(decide(egress as KubernetesEgressConfig, {})).toMatchObject({ pass: true })
	})

	it('passes a static allowlist translation alone, narrowed or not', () => {
		const hosts = ['a.example']
		const policy = { kind: 'static', allowedHosts: hosts } as const
		expect(decide({ engine: 'cilium', policy }, {}, { hosts })).toMatchObject({ pass: true })
		const narrowed: KubernetesEgressConfig = {
			engine: 'cilium',
			policy,
			ciliumNarrowing: { ports: [443], tlsServerNames: true, dnsNames: true },
		}
		expect(decide(narrowed, {}, { hosts })).toMatchObject({ pass: true })
	})

	it('refuses a second selecting policy that opens the internet (policy-widens-egress), naming it', () => {
		const decision = decide(denyAll, {
			core: [np('placeholder', { ...selectAll, policyTypes: ['Egress'], egress: [internetRule] })],
		})
		expect(decision).toMatchObject({ pass: false, refusal: 'policy-widens-egress' })
		expect(decision.examined).toContainEqual(
			expect.objectContaining({ name: 'placeholder', verdict: 'widens-egress' }),
		)
		expect(decision.examined).toContainEqual(
			expect.objectContaining({ name: 'task-egress', verdict: 'within-translation' }),
		)
	})

	it('ignores a widening policy whose selector does not match the pod, whatever its name', () => {
		const decision = decide(denyAll, {
			core: [
				np('task-egress-extra', {
					podSelector: { matchLabels: { app: 'other' } },
					policyTypes: ['Egress'],
					egress: [{}],
				}),
				np('expr', {
					podSelector: {
						matchExpressions: [{ key: 'app', operator: 'NotIn', values: ['sandbox'] }],
					},
					egress: [{}],
				}),
			],
		})
		expect(decision).toMatchObject({ pass: true })
		expect(decision.examined.filter((entry) => entry.verdict === 'not-selecting')).toHaveLength(2)
	})

	it('evaluates the controller-managed default template policy like any other and refuses it under deny-all', () => {
		// What the controller writes when a template omits networkPolicy, selecting a pool pod.
		const managed = np('task-network-policy', {
			podSelector: { matchLabels: { 'agents.x-k8s.io/sandbox-template-ref-hash': 'h' } },
			policyTypes: ['Ingress', 'Egress'],
			egress: [
				{
					to: [
						{
							ipBlock: {
								cidr: '0.0.0.0/0',
								except: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16'],
							},
						},
						{ ipBlock: { cidr: '::/0', except: ['fc00::/7', 'fe80::/10'] } },
					],
				},
			],
		})
		const pooled = decideEgressUnion({
			policies: [translatedPolicyObject(translation(denyAll), 'ns'), managed].map(
				readNetworkPolicy,
			),
			podLabels: { ...podLabels, 'agents.x-k8s.io/sandbox-template-ref-hash': 'h' },
			namespace: 'ns',
			allowance: translation(denyAll).allowance,
			unread: [],
		})
		expect(pooled).toMatchObject({ pass: false, refusal: 'policy-widens-egress' })
		// Under public-internet it still widens: 100.64/10, 127/8 and 168.63.129.16 stay reachable.
		const internet = translation({ policy: { kind: 'public-internet' } })
		const underInternet = decideEgressUnion({
			policies: [translatedPolicyObject(internet, 'ns'), managed].map(readNetworkPolicy),
			podLabels: { ...podLabels, 'agents.x-k8s.io/sandbox-template-ref-hash': 'h' },
			namespace: 'ns',
			allowance: internet.allowance,
			unread: [],
		})
		expect(underInternet).toMatchObject({ pass: false, refusal: 'policy-widens-egress' })
	})

	it.each([
		[
			'any ports to kube-system',
			{
				to: [
					{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } } },
				],
			},
		],
		['port 53 anywhere', { ports: [{ protocol: 'UDP', port: 53 }] }],
		[
			'port 53 to the own namespace',
			{ to: [{ podSelector: {} }], ports: [{ protocol: 'UDP', port: 53 }] },
		],
		[
			'port 53 to any namespace',
			{ to: [{ namespaceSelector: {} }], ports: [{ protocol: 'UDP', port: 53 }] },
		],
		['a /32 address', { to: [{ ipBlock: { cidr: '203.0.113.7/32' } }] }],
		[
			'a port range through 53',
			{
				to: [
					{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } } },
				],
				ports: [{ protocol: 'UDP', port: 50, endPort: 60 }],
			},
		],
	])('refuses %s under deny-all as widening', (_what, rule) => {
		const decision = decide(denyAll, {
			core: [np('second', { ...selectAll, policyTypes: ['Egress'], egress: [rule] })],
		})
		expect(decision).toMatchObject({ pass: false, refusal: 'policy-widens-egress' })
	})

	it('passes a second policy that only narrows: DNS to kube-system pods on 53', () => {
		const decision = decide(denyAll, {
			core: [
				np('dns-only', {
					...selectAll,
					policyTypes: ['Egress'],
					egress: [
						{
							to: [
								{
									namespaceSelector: {
										matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' },
									},
									podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } },
								},
							],
							ports: [{ protocol: 'TCP', port: 53 }],
						},
					],
				}),
				np('ingress-only', { ...selectAll, policyTypes: ['Ingress'], ingress: [] }),
			],
		})
		expect(decision).toMatchObject({ pass: true })
		expect(decision.examined).toContainEqual(
			expect.objectContaining({ name: 'ingress-only', verdict: 'no-egress-effect' }),
		)
	})

	it('refuses any egress rule at all under no-network, the cluster DNS rule included', () => {
		const decision = decide(
			{ policy: { kind: 'no-network' } },
			{ core: [translatedPolicyObject(translation(denyAll), 'ns')] },
		)
		expect(decision).toMatchObject({ pass: false, refusal: 'policy-widens-egress' })
	})

	it('refuses no-enforcing-policy when nothing selecting the pod isolates its egress, except under allow-all', () => {
		const ingressOnly = np('ingress-only', { ...selectAll, policyTypes: ['Ingress'] })
		expect(decide(denyAll, { core: [ingressOnly] }, { withTranslation: false })).toMatchObject({
			pass: false,
			refusal: 'no-enforcing-policy',
		})
		expect(
			decide(
				{ policy: { kind: 'allow-all' } },
				{ core: [ingressOnly] },
				{ withTranslation: false },
			),
		).toMatchObject({
			pass: true,
		})
	})

	it.each([
		['a spec.egress that is not a list', { ...selectAll, egress: { to: [] } }],
		['a podSelector that is not a selector', { podSelector: 'app=sandbox', egress: [] }],
		[
			'an unknown selector operator',
			{ podSelector: { matchExpressions: [{ key: 'a', operator: 'Gt', values: ['1'] }] } },
		],
		[
			'a named port',
			{
				...selectAll,
				policyTypes: ['Egress'],
				egress: [
					{
						to: [
							{
								namespaceSelector: {
									matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' },
								},
							},
						],
						ports: [{ port: 'dns' }],
					},
				],
			},
		],
		[
			'a peer field it does not know',
			{ ...selectAll, policyTypes: ['Egress'], egress: [{ to: [{ serviceSelector: {} }] }] },
		],
	])('refuses %s as not-evaluable, never reading it as empty', (_what, spec) => {
		expect(decide(denyAll, { core: [np('odd', spec)] })).toMatchObject({
			pass: false,
			refusal: 'not-evaluable',
		})
	})

	it('refuses an unread collection as not-evaluable', () => {
		const unread: UnreadPolicySource[] = [
			{
				resource: 'networkpolicies',
				apiGroup: 'networking.k8s.io',
				status: 'forbidden',
				verb: 'list',
			},
		]
		expect(decide(denyAll, {}, { unread, withTranslation: false })).toMatchObject({
			pass: false,
			refusal: 'not-evaluable',
		})
	})

	describe('under the cilium engine', () => {
		const hosts = ['a.example', 'b.example']
		const policy = { kind: 'static', allowedHosts: hosts } as const
		const endpointSelector = { matchLabels: { 'k8s:sandbox.namzu.ai/template': 'task' } }

		it.each([
			['another host', { toFQDNs: [{ matchName: 'c.example' }] }],
			['a pattern', { toFQDNs: [{ matchPattern: '*.example' }] }],
			['a whole entity', { toEntities: ['world'] }],
			['a CIDR', { toCIDR: ['203.0.113.0/24'] }],
		])('refuses a second CiliumNetworkPolicy allowing %s', (_what, rule) => {
			const decision = decide(
				{ engine: 'cilium', policy },
				{ cilium: [cnp('extra', { endpointSelector, egress: [rule] })] },
				{ hosts },
			)
			expect(decision).toMatchObject({ pass: false, refusal: 'policy-widens-egress' })
		})

		it('tracks ports per host: an allowed host on a wider port, or on every port, widens the narrowed translation', () => {
			const narrowed: KubernetesEgressConfig = {
				engine: 'cilium',
				policy,
				ciliumNarrowing: { ports: [443] },
			}
			const wider = cnp('wider', {
				endpointSelector,
				egress: [
					{
						toFQDNs: [{ matchName: 'a.example' }],
						toPorts: [{ ports: [{ port: '22', protocol: 'TCP' }] }],
					},
				],
			})
			const unported = cnp('unported', {
				endpointSelector,
				egress: [{ toFQDNs: [{ matchName: 'a.example' }] }],
			})
			const same = cnp('same', {
				endpointSelector,
				egress: [
					{
						toFQDNs: [{ matchName: 'a.example' }],
						toPorts: [{ ports: [{ port: '443', protocol: 'TCP' }] }],
					},
				],
			})
			expect(decide(narrowed, { cilium: [wider] }, { hosts })).toMatchObject({
				refusal: 'policy-widens-egress',
			})
			expect(decide(narrowed, { cilium: [unported] }, { hosts })).toMatchObject({
				refusal: 'policy-widens-egress',
			})
			expect(decide(narrowed, { cilium: [same] }, { hosts })).toMatchObject({ pass: true })
		})

		it('with dnsNames, a plain NetworkPolicy kube-dns rule widens (it resolves any name); without, it is inside', () => {
			const plainDns = np('namzu-sandbox', {
				...selectAll,
				policyTypes: ['Egress'],
				egress: [
					{
						to: [
							{
								namespaceSelector: {
									matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' },
								},
							},
						],
						ports: [
							{ protocol: 'UDP', port: 53 },
							{ protocol: 'TCP', port: 53 },
						],
					},
				],
			})
			const narrowed: KubernetesEgressConfig = {
				engine: 'cilium',
				policy,
				ciliumNarrowing: { dnsNames: true },
			}
			const refused = decide(narrowed, { core: [plainDns] }, { hosts })
			expect(refused).toMatchObject({ pass: false, refusal: 'policy-widens-egress' })
			expect(refused.examined).toContainEqual(
				expect.objectContaining({ name: 'namzu-sandbox', verdict: 'widens-egress' }),
			)
			expect(decide({ engine: 'cilium', policy }, { core: [plainDns] }, { hosts })).toMatchObject({
				pass: true,
			})
		})

		it('refuses a fromCIDR-style string where a list belongs as not-evaluable', () => {
			const decision = decide(
				{ engine: 'cilium', policy },
				{ cilium: [cnp('odd', { endpointSelector, egress: [{ toCIDR: '0.0.0.0/0' }] })] },
				{ hosts },
			)
			expect(decision).toMatchObject({ pass: false, refusal: 'not-evaluable' })
		})
	})
})
