// The process kubelet's NetworkPolicy firewall renderer, pure: what an unselected, an isolated and
// a union-allowed pod get, peers resolved from pod and namespace selectors, ipBlock excepts, ports.
import { describe, expect, it } from 'vitest'
import { type FirewallInput, renderPodFirewall } from './policy-firewall.js'

const pod = { namespace: 'ns', labels: { app: 'sbx' }, address: '10.9.0.2' }
const peers = [
	pod,
	{ namespace: 'ns', labels: { app: 'web' }, address: '10.9.0.3' },
	{ namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' }, address: '10.9.0.4' },
]
const namespaces = new Map([
	['ns', { 'kubernetes.io/metadata.name': 'ns' }],
	['kube-system', { 'kubernetes.io/metadata.name': 'kube-system' }],
])
const policy = (name: string, spec: object, namespace = 'ns') => ({
	metadata: { name, namespace },
	spec,
})
const input = (policies: object[]): FirewallInput => ({ pod, policies, namespaces, pods: peers })

describe('renderPodFirewall', () => {
	it('gives a pod no policy selects (another namespace, another label) chains that accept everything, tracking connections', () => {
		const script = renderPodFirewall(
			input([
				policy('other-ns', { podSelector: {}, policyTypes: ['Egress'] }, 'elsewhere'),
				policy('other-app', {
					podSelector: { matchLabels: { app: 'web' } },
					policyTypes: ['Ingress'],
				}),
			]),
		)
		expect(script).toBe(
			[
				'table inet namzu_policy {}',
				'delete table inet namzu_policy',
				'table inet namzu_policy {',
				'\tchain ingress {',
				'\t\ttype filter hook input priority 0; policy accept;',
				'\t\tct state established,related accept',
				'\t\tiif lo accept',
				'\t}',
				'\tchain egress {',
				'\t\ttype filter hook output priority 0; policy accept;',
				'\t\tct state established,related accept',
				'\t\toif lo accept',
				'\t}',
				'}',
				'',
			].join('\n'),
		)
	})

	it('drops egress for an egress-isolated pod, allowing the union of the rules, replies and loopback', () => {
		const script = renderPodFirewall(
			input([
				policy('dns', {
					podSelector: {},
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
				}),
				policy('internet', {
					podSelector: { matchLabels: { app: 'sbx' } },
					policyTypes: ['Egress'],
					egress: [{ to: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['10.0.0.0/8'] } }] }],
				}),
			]),
		)
		expect(script).toContain('type filter hook output priority 0; policy drop;')
		expect(script).toContain('type filter hook input priority 0; policy accept;')
		expect(script).toContain('ct state established,related accept')
		expect(script).toContain('oif lo accept')
		expect(script).toContain('ip daddr { 10.9.0.4 } udp dport 53 accept')
		expect(script).toContain('ip daddr { 10.9.0.4 } tcp dport 53 accept')
		expect(script).toContain('ip daddr 0.0.0.0/0 ip daddr != { 10.0.0.0/8 } accept')
	})

	it('isolates ingress with no rule as deny, and resolves a podSelector to addresses of its namespace', () => {
		const closed = renderPodFirewall(
			input([policy('deny', { podSelector: {}, policyTypes: ['Ingress'] })]),
		)
		expect(closed).toContain('type filter hook input priority 0; policy drop;')
		expect(closed).not.toMatch(/saddr/)
		const web = renderPodFirewall(
			input([
				policy('from-web', {
					podSelector: {},
					ingress: [
						{ from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ port: 7070 }] },
					],
				}),
			]),
		)
		expect(web).toContain('ip saddr { 10.9.0.3 } tcp dport 7070 accept')
	})

	it('allows everything for an empty rule and nothing for a peer that selects no pod', () => {
		const all = renderPodFirewall(
			input([policy('all', { podSelector: {}, policyTypes: ['Egress'], egress: [{}] })]),
		)
		expect(all).toMatch(/\n\t\taccept\n/)
		const none = renderPodFirewall(
			input([
				policy('nobody', {
					podSelector: {},
					policyTypes: ['Egress'],
					egress: [{ to: [{ podSelector: { matchLabels: { app: 'absent' } } }] }],
				}),
			]),
		)
		expect(none).toContain('policy drop;')
		expect(none).not.toMatch(/daddr/)
	})
})
