// The ingress decision for the agent port, table-driven: covered only by an ingress-enforcing
// policy selecting the pod's real labels, opened by any one wide-open rule, and never satisfied by
// a policy that selects a label the pod lacks or allows without isolating.
import { describe, expect, it } from 'vitest'
import { decideIngressCoverage } from '../../../../src/backends/kubernetes/network/ingress-coverage.js'
import {
	readCiliumPolicy,
	readNetworkPolicy,
} from '../../../../src/backends/kubernetes/network/policy-model.js'
import type { UnreadPolicySource } from '../../../../src/index.js'

const podLabels = { 'sandbox.namzu.ai/template': 'task' }
const templateSelector = { matchLabels: podLabels }
const np = (name: string, spec: object) => readNetworkPolicy({ metadata: { name }, spec })
const cnp = (name: string, spec: object) => readCiliumPolicy({ metadata: { name }, spec })

/** What k8s/manifests/networkpolicy.yaml applies: the agent port only from the host's pods. */
const shipped = np('namzu-sandbox-ingress', {
	podSelector: templateSelector,
	policyTypes: ['Ingress'],
	ingress: [
		{
			from: [
				{
					namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'namzu-host' } },
					podSelector: { matchLabels: { app: 'namzu-host' } },
				},
			],
			ports: [{ protocol: 'TCP', port: 1024 }],
		},
	],
})

function decide(policies: ReturnType<typeof np>[], unread: UnreadPolicySource[] = []) {
	return decideIngressCoverage({ policies, podLabels, namespace: 'ns', agentPort: 1024, unread })
}

describe('the ingress decision for the agent port', () => {
	it('passes with the shipped policy, and with a deny-all-ingress policy', () => {
		expect(decide([shipped])).toMatchObject({ pass: true })
		expect(decide([np('deny', { podSelector: {}, policyTypes: ['Ingress'] })])).toMatchObject({
			pass: true,
		})
	})

	it('refuses a namespace without a policy (no-ingress-policy), and one whose policies only govern egress', () => {
		expect(decide([])).toMatchObject({ pass: false, refusal: 'no-ingress-policy' })
		expect(
			decide([np('egress', { podSelector: {}, policyTypes: ['Egress'], egress: [] })]),
		).toMatchObject({ pass: false, refusal: 'no-ingress-policy' })
	})

	it('does not count the template inline policy, which selects a label only pool pods carry', () => {
		const managed = np('task-network-policy', {
			podSelector: { matchLabels: { 'agents.x-k8s.io/sandbox-template-ref-hash': 'h' } },
			policyTypes: ['Ingress', 'Egress'],
			ingress: [],
		})
		const decision = decide([managed])
		expect(decision).toMatchObject({ pass: false, refusal: 'no-ingress-policy' })
		expect(decision.examined).toEqual([
			{ kind: 'NetworkPolicy', name: 'task-network-policy', verdict: 'not-selecting' },
		])
	})

	it.each([
		['no from', { ports: [{ port: 1024 }] }],
		['an empty rule', {}],
		['0.0.0.0/0', { from: [{ ipBlock: { cidr: '0.0.0.0/0' } }] }],
		['every pod of every namespace', { from: [{ namespaceSelector: {} }] }],
		['every pod of the namespace', { from: [{ podSelector: {} }] }],
		['a port range over the agent port', { ports: [{ port: 1000, endPort: 2000 }] }],
	])(
		'refuses one open rule (%s) however many closed policies select the pod too',
		(_what, rule) => {
			const open = np('open', { podSelector: {}, policyTypes: ['Ingress'], ingress: [rule] })
			const decision = decide([shipped, open])
			expect(decision).toMatchObject({ pass: false, refusal: 'agent-port-open' })
			expect(decision.examined).toContainEqual(
				expect.objectContaining({ name: 'open', verdict: 'opens-agent-port' }),
			)
		},
	)

	it('passes an open rule on another port, and a /32 host peer on the agent port', () => {
		const other = np('web', {
			podSelector: {},
			policyTypes: ['Ingress'],
			ingress: [{ ports: [{ port: 8080 }] }, { from: [{ ipBlock: { cidr: '10.0.0.1/32' } }] }],
		})
		expect(decide([other])).toMatchObject({ pass: true })
	})

	it.each([
		['spec.ingress that is not a list', { podSelector: {}, ingress: { from: [] } }],
		['a podSelector that is not a selector', { podSelector: ['task'], ingress: [] }],
		[
			'a named port',
			{
				podSelector: {},
				ingress: [
					{ from: [{ podSelector: { matchLabels: { a: 'b' } } }], ports: [{ port: 'agent' }] },
				],
			},
		],
	])('refuses %s as not-evaluable', (_what, spec) => {
		expect(decide([shipped, np('odd', spec)])).toMatchObject({
			pass: false,
			refusal: 'not-evaluable',
		})
	})

	it('refuses an unread collection as not-evaluable and names the verb to grant, not a policy to apply', () => {
		const decision = decide(
			[],
			[
				{
					resource: 'networkpolicies',
					apiGroup: 'networking.k8s.io',
					status: 'forbidden',
					verb: 'list',
				},
			],
		)
		expect(decision).toMatchObject({ pass: false, refusal: 'not-evaluable' })
	})

	describe('Cilium policies', () => {
		const endpointSelector = { matchLabels: { 'k8s:sandbox.namzu.ai/template': 'task' } }

		it('counts an isolating CiliumNetworkPolicy that admits only named endpoints', () => {
			const closed = cnp('closed', {
				endpointSelector,
				ingress: [
					{
						fromEndpoints: [{ matchLabels: { 'k8s:app': 'namzu-host' } }],
						toPorts: [{ ports: [{ port: '1024', protocol: 'TCP' }] }],
					},
				],
			})
			expect(decide([closed])).toMatchObject({ pass: true })
		})

		it('never counts enableDefaultDeny.ingress false as coverage, and still reads what it admits', () => {
			const allowing = cnp('allowing', {
				endpointSelector,
				enableDefaultDeny: { ingress: false },
				ingress: [{ fromEndpoints: [{ matchLabels: { 'k8s:app': 'namzu-host' } }] }],
			})
			expect(decide([allowing])).toMatchObject({ pass: false, refusal: 'no-ingress-policy' })
			expect(decide([allowing]).examined).toEqual([
				{ kind: 'CiliumNetworkPolicy', name: 'allowing', verdict: 'does-not-isolate' },
			])
			const opening = cnp('opening', {
				endpointSelector,
				enableDefaultDeny: { ingress: false },
				ingress: [{ fromEntities: ['world'] }],
			})
			expect(decide([shipped, opening])).toMatchObject({ pass: false, refusal: 'agent-port-open' })
		})

		it('refuses a fromCIDR given as a string rather than reading it as empty', () => {
			const odd = cnp('odd', { endpointSelector, ingress: [{ fromCIDR: '0.0.0.0/0' }] })
			expect(decide([shipped, odd])).toMatchObject({ pass: false, refusal: 'not-evaluable' })
		})

		it('refuses fromEndpoints [{}] and fromCIDR 0.0.0.0/0 on the agent port as open', () => {
			for (const rule of [{ fromEndpoints: [{}] }, { fromCIDR: ['0.0.0.0/0'] }]) {
				const open = cnp('open', { endpointSelector, ingress: [rule] })
				expect(decide([shipped, open])).toMatchObject({ pass: false, refusal: 'agent-port-open' })
			}
		})
	})
})
