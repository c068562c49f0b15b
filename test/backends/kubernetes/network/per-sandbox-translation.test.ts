import { describe, expect, it } from 'vitest'
import { resolveKubernetesBackendConfig } from '../../../../src/backends/kubernetes/kubernetes-backend-config.js'
import type { ResolvedCiliumNarrowing } from '../../../../src/backends/kubernetes/network/egress-config.js'
import { translateEgressPolicy } from '../../../../src/backends/kubernetes/network/egress-translation.js'
import { canonicalAllowedHosts } from '../../../../src/backends/kubernetes/network/per-sandbox-hosts.js'
import {
	perSandboxPolicyName,
	perSandboxPolicyObject,
} from '../../../../src/backends/kubernetes/network/per-sandbox-policy-object.js'
import { translatePerSandboxEgress } from '../../../../src/backends/kubernetes/network/per-sandbox-translation.js'
import {
	type KubernetesBackendConfig,
	KubernetesNetworkPolicyHostError,
	PER_SANDBOX_POLICY_NAME_PREFIX,
} from '../../../../src/index.js'
import type { KubernetesCiliumNarrowing } from '../../../../src/kubernetes-entry.js'

const KEY = 'sandbox.namzu.ai/per-sandbox-egress'
const selector = { [KEY]: 'namzu-task-abc' }

const DNS_RULE_ANY = {
	toEndpoints: [
		{
			matchLabels: { 'k8s:io.kubernetes.pod.namespace': 'kube-system', 'k8s:k8s-app': 'kube-dns' },
		},
	],
	toPorts: [{ ports: [{ port: '53', protocol: 'ANY' }], rules: { dns: [{ matchPattern: '*' }] } }],
}

function narrowing(given: KubernetesCiliumNarrowing): ResolvedCiliumNarrowing {
	const resolved = resolveKubernetesBackendConfig({
		tier: 'microvm',
		service: 'kubernetes',
		namespace: 'ns',
		access: { server: 'https://127.0.0.1:1', getToken: async () => 't' },
		sandboxTemplateName: 'tpl',
		egress: { policy: { kind: 'deny-all' }, perSandbox: { narrowing: given } },
	} as KubernetesBackendConfig)
	const found = resolved.egress?.perSandbox?.narrowing
	if (!found) throw new Error('no narrowing')
	return found
}

function thrown(run: () => unknown): unknown {
	try {
		run()
	} catch (error) {
		return error
	}
	throw new Error('expected a refusal')
}

describe('the per-sandbox allowlist grammar', () => {
	it('R15-e2024bc-19: canonicalises letter case and drops the duplicates it makes', () => {
		expect(canonicalAllowedHosts(['API.Example.com', 'api.example.com', '.Example.ORG'])).toEqual([
			'api.example.com',
			'.example.org',
		])
	})

	it.each([
		['https://api.example.com/', 'url'],
		['api.example.com/path', 'url'],
		['api.example.com:443', 'port'],
		['*.example.com', 'glob'],
		['api?.example.com', 'glob'],
		['203.0.113.7', 'ip-address'],
		['.203.0.113.7', 'ip-address'],
		['2001:db8::1', 'ip-address'],
		['[2001:db8::1]:443', 'ip-address'],
		['.com', 'public-suffix'],
		['.co.uk', 'public-suffix'],
		['example..com', 'not-a-hostname'],
		['-bad.example.com', 'not-a-hostname'],
		['', 'not-a-hostname'],
		['example.com.', 'not-a-hostname'],
	])('R15-e2024bc-20: refuses %j as %s with KubernetesNetworkPolicyHostError', (host, problem) => {
		const error = thrown(() => canonicalAllowedHosts(['ok.example.com', host]))
		expect(error).toBeInstanceOf(KubernetesNetworkPolicyHostError)
		expect(error).toMatchObject({ problem, index: 1, field: 'allowedHosts[1]' })
	})

	it('refuses an entry that is not a string without echoing it', () => {
		const error = thrown(() => canonicalAllowedHosts([{ token: 'secret' }]))
		expect(error).toMatchObject({ problem: 'not-a-string', index: 0 })
		expect(String(error)).not.toContain('secret')
	})

	it.each(['example.com', 'a-b.example.co.uk', '.example.com', '.example.co.uk', 'localhost'])(
		'accepts %j',
		(host) => {
			expect(canonicalAllowedHosts([host])).toEqual([host])
		},
	)
})

describe('the per-sandbox translation', () => {
	it('R15-e2024bc-13: the DNS rule plus one toFQDNs rule: a host is a matchName, a .domain a matchName plus *.domain', () => {
		expect(
			translatePerSandboxEgress(['api.example.com', '.example.org'], undefined, selector),
		).toEqual({
			endpointSelector: { matchLabels: selector },
			egress: [
				DNS_RULE_ANY,
				{
					toFQDNs: [
						{ matchName: 'api.example.com' },
						{ matchName: 'example.org' },
						{ matchPattern: '*.example.org' },
					],
				},
			],
		})
	})

	it('R15-e2024bc-14: ports and hostPorts narrow per entry, as the config-level translation does', () => {
		const spec = translatePerSandboxEgress(
			['api.example.com', 'git.example.com'],
			narrowing({ ports: [443], hostPorts: { 'git.example.com': [22, 443] } }),
			selector,
		)
		expect((spec.egress as unknown[]).slice(1)).toEqual([
			{
				toFQDNs: [{ matchName: 'api.example.com' }],
				toPorts: [{ ports: [{ port: '443', protocol: 'TCP' }] }],
			},
			{
				toFQDNs: [{ matchName: 'git.example.com' }],
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

	it('R15-e2024bc-14: tlsServerNames puts serverNames on an exact host TLS port', () => {
		const spec = translatePerSandboxEgress(
			['api.example.com'],
			narrowing({ tlsServerNames: true }),
			selector,
		)
		expect((spec.egress as unknown[])[1]).toEqual({
			toFQDNs: [{ matchName: 'api.example.com' }],
			toPorts: [{ ports: [{ port: '443', protocol: 'TCP' }], serverNames: ['api.example.com'] }],
		})
	})

	it('R15-e2024bc-15: under dnsNames a .domain also gets *.<domain>.<suffix> patterns; an exact host only names', () => {
		const spec = translatePerSandboxEgress(
			['api.example.com', '.example.org'],
			narrowing({ dnsNames: { namespace: 'ns', searchSuffixes: ['corp.example'] } }),
			selector,
		)
		const egress = spec.egress as { toPorts?: { rules?: { dns?: unknown[] } }[] }[]
		const dns = egress[0]?.toPorts?.[0]?.rules?.dns ?? []
		const suffixes = ['ns.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'corp.example']
		expect(dns).toEqual([
			{ matchName: 'api.example.com' },
			...suffixes.map((s) => ({ matchName: `api.example.com.${s}` })),
			{ matchName: 'example.org' },
			...suffixes.map((s) => ({ matchName: `example.org.${s}` })),
			{ matchPattern: '*.example.org' },
			...suffixes.map((s) => ({ matchPattern: `*.example.org.${s}` })),
		])
		const patterns = dns.filter(
			(s) => JSON.stringify(s).includes('api.example.com') && JSON.stringify(s).includes('Pattern'),
		)
		expect(patterns).toEqual([])
	})

	it('R15-e2024bc-21/22: a .domain with tlsServerNames is refused, naming perSandbox.narrowing, the expansion and the remedy', () => {
		const error = thrown(() =>
			translatePerSandboxEgress(
				['a.example.com', '.example.org'],
				narrowing({ tlsServerNames: true }),
				selector,
			),
		)
		expect(error).toBeInstanceOf(KubernetesNetworkPolicyHostError)
		expect(error).toMatchObject({
			problem: 'domain-with-tls-server-names',
			field: 'config.egress.perSandbox.narrowing',
			index: 1,
		})
		const message = String((error as Error).message)
		expect(message).toContain('config.egress.perSandbox.narrowing')
		expect(message).toContain('"*.example.org"')
		expect(message).toContain('list the exact hosts, or leave tlsServerNames off for a domain list')
		expect(message).toContain('every subdomain of it')
	})
})

describe('the config-level .domain with tlsServerNames', () => {
	const config = (hosts: string[], tls: boolean) =>
		resolveKubernetesBackendConfig({
			tier: 'microvm',
			service: 'kubernetes',
			namespace: 'ns',
			access: { server: 'https://127.0.0.1:1', getToken: async () => 't' },
			sandboxTemplateName: 'tpl',
			egress: {
				engine: 'cilium',
				policy: { kind: 'static', allowedHosts: hosts },
				ciliumNarrowing: { tlsServerNames: tls, ports: [443] },
			},
		} as KubernetesBackendConfig).egress

	it('R15-e2024bc-21/23: is refused at the translation, naming ciliumNarrowing, saying the literal name admits nothing, offering no remedy', () => {
		const egress = config(['.example.com'], true)
		if (!egress) throw new Error('no egress')
		const error = thrown(() => translateEgressPolicy(egress, 'tpl', ['.example.com']))
		expect(error).toBeInstanceOf(KubernetesNetworkPolicyHostError)
		expect(error).toMatchObject({
			field: 'config.egress.ciliumNarrowing',
			problem: 'domain-with-tls-server-names',
		})
		const message = String((error as Error).message)
		expect(message).toContain('admits nothing with or without the option')
		expect(message).not.toContain('list the exact hosts')
		expect(message).not.toContain('every subdomain of it')
	})

	it('R15-e2024bc-24: without tlsServerNames a .domain stays the literal matchName', () => {
		const egress = config(['.example.com'], false)
		if (!egress) throw new Error('no egress')
		const translated = translateEgressPolicy(egress, 'tpl', ['.example.com'])
		expect(JSON.stringify(translated.spec)).toContain('{"matchName":".example.com"}')
	})
})

describe('the per-sandbox policy object', () => {
	it('R15-e2024bc-09/12: is named namzu-sbx-<uid>, owned by the claim without blockOwnerDeletion', () => {
		expect(PER_SANDBOX_POLICY_NAME_PREFIX).toBe('namzu-sbx-')
		const owner = {
			apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
			kind: 'SandboxClaim' as const,
			name: 'namzu-task-abc',
			uid: '1234-5678',
		}
		expect(perSandboxPolicyName(owner.uid)).toBe('namzu-sbx-1234-5678')
		expect(perSandboxPolicyObject('ns', owner, { endpointSelector: {} })).toEqual({
			apiVersion: 'cilium.io/v2',
			kind: 'CiliumNetworkPolicy',
			metadata: {
				name: 'namzu-sbx-1234-5678',
				namespace: 'ns',
				ownerReferences: [owner],
			},
			spec: { endpointSelector: {} },
		})
	})
})
