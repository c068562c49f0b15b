// Egress translation, pure: every kind's object pinned by deep equality (verification of the named
// object is an exact match, so these bytes are what an operator applies), the template and profile
// selector, the default policy names, and the Cilium narrowing shapes.
import { describe, expect, it } from 'vitest'
import { resolveKubernetesBackendConfig } from '../../../../src/backends/kubernetes/kubernetes-backend-config.js'
import {
	translatedPolicyObject,
	translateEgressPolicy,
} from '../../../../src/backends/kubernetes/network/egress-translation.js'
import type { KubernetesEgressConfig } from '../../../../src/index.js'

const backend = {
	tier: 'microvm',
	service: 'kubernetes',
	namespace: 'sandboxes',
	access: { server: 'https://127.0.0.1:1', getToken: () => 't' },
	sandboxTemplateName: 'task',
} as const

function translate(egress: KubernetesEgressConfig, hosts?: readonly string[]) {
	const resolved = resolveKubernetesBackendConfig({ ...backend, egress })
	if (!resolved.egress) throw new Error('egress did not resolve')
	return translateEgressPolicy(resolved.egress, 'task', hosts)
}

const templateSelector = { matchLabels: { 'sandbox.namzu.ai/template': 'task' } }
const clusterDns = {
	to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } } }],
	ports: [
		{ protocol: 'UDP', port: 53 },
		{ protocol: 'TCP', port: 53 },
	],
}
const ciliumDns = (dns: readonly object[]) => ({
	toEndpoints: [
		{
			matchLabels: {
				'k8s:io.kubernetes.pod.namespace': 'kube-system',
				'k8s:k8s-app': 'kube-dns',
			},
		},
	],
	toPorts: [{ ports: [{ port: '53', protocol: 'ANY' }], rules: { dns } }],
})

describe('egress translation', () => {
	it('deny-all is exactly DNS (UDP and TCP 53) to kube-system', () => {
		expect(
			translatedPolicyObject(translate({ policy: { kind: 'deny-all' } }), 'sandboxes'),
		).toEqual({
			apiVersion: 'networking.k8s.io/v1',
			kind: 'NetworkPolicy',
			metadata: { name: 'task-egress', namespace: 'sandboxes' },
			spec: { podSelector: templateSelector, policyTypes: ['Egress'], egress: [clusterDns] },
		})
	})

	it('allow-all is the DNS rule plus one rule allowing everything', () => {
		expect(translate({ policy: { kind: 'allow-all' } }).spec).toEqual({
			podSelector: templateSelector,
			policyTypes: ['Egress'],
			egress: [clusterDns, {}],
		})
	})

	it('no-network is policyTypes Egress with no rule at all, not even DNS', () => {
		expect(translate({ policy: { kind: 'no-network' } }).spec).toEqual({
			podSelector: templateSelector,
			policyTypes: ['Egress'],
		})
	})

	it('public-internet: DNS to the resolver pods, both families minus the except lists, exceptCidrs routed by family', () => {
		const spec = translate({
			policy: { kind: 'public-internet', exceptCidrs: ['203.0.113.0/24', '2001:db8::/32'] },
		}).spec
		expect(spec).toEqual({
			podSelector: templateSelector,
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
					ports: [
						{ protocol: 'UDP', port: 53 },
						{ protocol: 'TCP', port: 53 },
					],
				},
				{
					to: [
						{
							ipBlock: {
								cidr: '0.0.0.0/0',
								except: [
									'10.0.0.0/8',
									'172.16.0.0/12',
									'192.168.0.0/16',
									'100.64.0.0/10',
									'169.254.0.0/16',
									'127.0.0.0/8',
									'168.63.129.16/32',
									'203.0.113.0/24',
								],
							},
						},
						{
							ipBlock: {
								cidr: '::/0',
								except: ['fc00::/7', 'fe80::/10', '::1/128', '2001:db8::/32'],
							},
						},
					],
				},
			],
		})
	})

	it('static under cilium: a CiliumNetworkPolicy, DNS visibility rule and one toFQDNs rule for every host', () => {
		const translated = translate(
			{
				engine: 'cilium',
				policy: { kind: 'static', allowedHosts: ['registry.npmjs.org', 'github.com'] },
			},
			['registry.npmjs.org', 'github.com'],
		)
		expect(translatedPolicyObject(translated, 'sandboxes')).toEqual({
			apiVersion: 'cilium.io/v2',
			kind: 'CiliumNetworkPolicy',
			metadata: { name: 'task-egress', namespace: 'sandboxes' },
			spec: {
				endpointSelector: templateSelector,
				egress: [
					ciliumDns([{ matchPattern: '*' }]),
					{ toFQDNs: [{ matchName: 'registry.npmjs.org' }, { matchName: 'github.com' }] },
				],
			},
		})
	})

	it('ports and hostPorts: one toFQDNs rule per host with its own toPorts', () => {
		const spec = translate(
			{
				engine: 'cilium',
				policy: { kind: 'static', allowedHosts: ['a.example', 'b.example'] },
				ciliumNarrowing: { ports: [443], hostPorts: { 'b.example': [22, 443] } },
			},
			['a.example', 'b.example'],
		).spec
		expect(spec.egress).toEqual([
			ciliumDns([{ matchPattern: '*' }]),
			{
				toFQDNs: [{ matchName: 'a.example' }],
				toPorts: [{ ports: [{ port: '443', protocol: 'TCP' }] }],
			},
			{
				toFQDNs: [{ matchName: 'b.example' }],
				toPorts: [
					{
						ports: [
							{ port: '22', protocol: 'TCP' },
							{ port: '443', protocol: 'TCP' },
						],
					},
				],
			},
		])
	})

	it('tlsServerNames: serverNames on the TLS ports; an unported host is limited to its TLS ports', () => {
		const spec = translate(
			{
				engine: 'cilium',
				policy: { kind: 'static', allowedHosts: ['a.example', 'b.example'] },
				ciliumNarrowing: {
					tlsServerNames: true,
					tlsPorts: [443, 8443],
					hostPorts: { 'b.example': [22, 443] },
				},
			},
			['a.example', 'b.example'],
		).spec
		expect(spec.egress).toEqual([
			ciliumDns([{ matchPattern: '*' }]),
			{
				toFQDNs: [{ matchName: 'a.example' }],
				toPorts: [
					{
						ports: [
							{ port: '443', protocol: 'TCP' },
							{ port: '8443', protocol: 'TCP' },
						],
						serverNames: ['a.example'],
					},
				],
			},
			{
				toFQDNs: [{ matchName: 'b.example' }],
				toPorts: [
					{ ports: [{ port: '22', protocol: 'TCP' }] },
					{ ports: [{ port: '443', protocol: 'TCP' }], serverNames: ['b.example'] },
				],
			},
		])
	})

	it('dnsNames: exact matchNames for each host under every search suffix, cluster.local by default', () => {
		const spec = translate(
			{
				engine: 'cilium',
				policy: { kind: 'static', allowedHosts: ['a.example'] },
				ciliumNarrowing: { dnsNames: { searchSuffixes: ['corp.internal'] } },
			},
			['a.example'],
		).spec
		expect(spec.egress).toEqual([
			ciliumDns([
				{ matchName: 'a.example' },
				{ matchName: 'a.example.sandboxes.svc.cluster.local' },
				{ matchName: 'a.example.svc.cluster.local' },
				{ matchName: 'a.example.cluster.local' },
				{ matchName: 'a.example.corp.internal' },
			]),
			{ toFQDNs: [{ matchName: 'a.example' }] },
		])
		const custom = translate(
			{
				engine: 'cilium',
				policy: { kind: 'static', allowedHosts: ['a.example'] },
				ciliumNarrowing: { dnsNames: { namespace: 'other', clusterDomain: 'k8s.test' } },
			},
			['a.example'],
		).spec
		expect(
			(custom.egress as { toPorts: { rules: { dns: unknown } }[] }[])[0]?.toPorts[0]?.rules.dns,
		).toEqual([
			{ matchName: 'a.example' },
			{ matchName: 'a.example.other.svc.k8s.test' },
			{ matchName: 'a.example.svc.k8s.test' },
			{ matchName: 'a.example.k8s.test' },
		])
	})

	it('a profile joins the selector (podSelector and endpointSelector) and names the policy', () => {
		const core = translate({ policy: { kind: 'deny-all' }, profile: 'none' })
		expect(core.name).toBe('task-none-egress')
		expect(core.spec.podSelector).toEqual({
			matchLabels: {
				'sandbox.namzu.ai/template': 'task',
				'sandbox.namzu.ai/egress-profile': 'none',
			},
		})
		const cilium = translate(
			{
				engine: 'cilium',
				policy: { kind: 'static', allowedHosts: [] },
				profile: 'internet',
				profileLabelKey: 'sandbox.users.io/egress',
			},
			[],
		)
		expect(cilium.name).toBe('task-internet-egress')
		expect(cilium.spec.endpointSelector).toEqual({
			matchLabels: { 'sandbox.namzu.ai/template': 'task', 'sandbox.users.io/egress': 'internet' },
		})
		expect(translate({ policy: { kind: 'deny-all' }, networkPolicyName: 'mine' }).name).toBe('mine')
	})

	it('without a profile the name and selector are the template ones alone', () => {
		const translated = translate({ policy: { kind: 'deny-all' } })
		expect(translated.name).toBe('task-egress')
		expect(translated.spec.podSelector).toEqual(templateSelector)
	})
})
