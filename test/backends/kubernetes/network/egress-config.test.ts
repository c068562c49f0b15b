// config.egress and config.ingress validation, table-driven: every refusal is synchronous, at
// construction, a named class naming the field — and createSandboxProvider contacts nothing.
import { describe, expect, it } from 'vitest'
import { resolveKubernetesBackendConfig } from '../../../../src/backends/kubernetes/kubernetes-backend-config.js'
import {
	createSandboxProvider,
	DEFAULT_EGRESS_PROFILE_LABEL_KEY,
	type KubernetesBackendConfig,
	KubernetesEgressNarrowingUnsupportedError,
	KubernetesEgressPolicyConfigError,
	KubernetesEgressProfileConfigError,
	KubernetesUnenforceableEgressPolicyError,
	SandboxConfigError,
} from '../../../../src/index.js'

const backend: KubernetesBackendConfig = {
	tier: 'microvm',
	service: 'kubernetes',
	namespace: 'sandboxes',
	access: {
		server: 'https://127.0.0.1:1',
		getToken: () => {
			throw new Error('construction must not ask for a token')
		},
	},
	sandboxTemplateName: 'task',
}

function refusal(overrides: Record<string, unknown>): unknown {
	try {
		resolveKubernetesBackendConfig({ ...backend, ...overrides } as KubernetesBackendConfig)
	} catch (error) {
		return error
	}
	return undefined
}

const hosts = { kind: 'static', allowedHosts: ['a.example'] }
const cilium = (ciliumNarrowing: object) => ({
	egress: { engine: 'cilium', policy: hosts, ciliumNarrowing },
})

describe('config.egress validation', () => {
	it('defaults: engine core, verify union, name <template>-egress, ingress verified by core policies', () => {
		const resolved = resolveKubernetesBackendConfig({
			...backend,
			egress: { policy: { kind: 'deny-all' } },
		})
		expect(resolved.egress).toEqual({
			policy: { kind: 'deny-all' },
			networkPolicyName: 'task-egress',
			engine: 'core',
			verify: 'union',
		})
		expect(resolved.ingress).toEqual({ verify: true, engine: 'core' })
		expect(resolveKubernetesBackendConfig({ ...backend, ingress: 'unverified' }).ingress).toEqual({
			verify: false,
		})
		expect(resolveKubernetesBackendConfig(backend).egress).toBeUndefined()
	})

	it.each([
		['static', { kind: 'static', allowedHosts: ['a.example'] }],
		['resolver', { kind: 'resolver', resolve: async () => ['a.example'] }],
	])(
		'refuses a %s allowlist under the core engine, naming the kind and the FQDN engine it needs',
		(kind, policy) => {
			const error = refusal({ egress: { policy } })
			expect(error).toBeInstanceOf(KubernetesUnenforceableEgressPolicyError)
			expect(error).toMatchObject({ policyKind: kind, engine: 'core' })
			expect((error as Error).message).toContain(`'${kind}'`)
			expect((error as Error).message).toContain('FQDN')
		},
	)

	it.each([
		[
			'policy.exceptCidrs[1]',
			{
				egress: {
					policy: { kind: 'public-internet', exceptCidrs: ['10.1.0.0/16', 'example.com'] },
				},
			},
		],
		[
			'policy.exceptCidrs[0]',
			{ egress: { policy: { kind: 'public-internet', exceptCidrs: ['10.0.0.0/33'] } } },
		],
		[
			'policy.exceptCidrs',
			{ egress: { policy: { kind: 'public-internet', exceptCidrs: '10.0.0.0/8' } } },
		],
		[
			'policy.allowedHosts[0]',
			{
				egress: {
					engine: 'cilium',
					policy: { kind: 'static', allowedHosts: ['https://a.example/'] },
				},
			},
		],
		['ciliumNarrowing.ports[0]', cilium({ ports: [0] })],
		['ciliumNarrowing.ports[0]', cilium({ ports: [65_536] })],
		['ciliumNarrowing.ports', cilium({ ports: [] })],
		['ciliumNarrowing.hostPorts.a.example', cilium({ hostPorts: { 'a.example': [] } })],
		['ciliumNarrowing.tlsPorts', cilium({ tlsServerNames: true, tlsPorts: [] })],
		['ciliumNarrowing.dnsNames.clusterDomain', cilium({ dnsNames: { clusterDomain: '' } })],
		['ciliumNarrowing.dnsNames.searchSuffixes[0]', cilium({ dnsNames: { searchSuffixes: [''] } })],
	])('refuses %s with KubernetesEgressPolicyConfigError', (field, overrides) => {
		const error = refusal(overrides)
		expect(error).toBeInstanceOf(KubernetesEgressPolicyConfigError)
		expect(error).toMatchObject({ field })
	})

	it.each([
		[
			'core engine',
			{ egress: { policy: { kind: 'deny-all' }, ciliumNarrowing: { ports: [443] } } },
		],
		[
			'deny-all',
			{
				egress: {
					engine: 'cilium',
					policy: { kind: 'deny-all' },
					ciliumNarrowing: { dnsNames: true },
				},
			},
		],
		[
			'no-network',
			{
				egress: {
					engine: 'cilium',
					policy: { kind: 'no-network' },
					ciliumNarrowing: { tlsServerNames: true },
				},
			},
		],
		[
			'allow-all',
			{
				egress: {
					engine: 'cilium',
					policy: { kind: 'allow-all' },
					ciliumNarrowing: { ports: [443] },
				},
			},
		],
		[
			'public-internet',
			{
				egress: {
					engine: 'cilium',
					policy: { kind: 'public-internet' },
					ciliumNarrowing: { hostPorts: {}, ports: [1] },
				},
			},
		],
	])(
		'refuses ciliumNarrowing beside the %s with KubernetesEgressNarrowingUnsupportedError',
		(_what, overrides) => {
			expect(refusal(overrides)).toBeInstanceOf(KubernetesEgressNarrowingUnsupportedError)
		},
	)

	it.each([
		['profile', { profile: 'Not_A_Label' }],
		['profile', { profile: '' }],
		['profile', { profile: 'x'.repeat(64) }],
		['profileLabelKey', { profile: 'none', profileLabelKey: 'sandbox.namzu.ai/template' }],
		['profileLabelKey', { profile: 'none', profileLabelKey: 'not a key' }],
	])(
		'refuses %s it will not write onto a pod with KubernetesEgressProfileConfigError',
		(field, extra) => {
			const error = refusal({ egress: { policy: { kind: 'deny-all' }, ...extra } })
			expect(error).toBeInstanceOf(KubernetesEgressProfileConfigError)
			expect(error).toMatchObject({ field })
		},
	)

	it('refuses a profile whose default policy name would pass 253 characters', () => {
		const error = refusal({
			sandboxTemplateName: 't'.repeat(200),
			egress: { policy: { kind: 'deny-all' }, profile: 'p'.repeat(60) },
		})
		expect(error).toBeInstanceOf(KubernetesEgressProfileConfigError)
		expect(error).toMatchObject({ field: 'profile' })
	})

	it('exports the default profile label key', () => {
		expect(DEFAULT_EGRESS_PROFILE_LABEL_KEY).toBe('sandbox.namzu.ai/egress-profile')
		const resolved = resolveKubernetesBackendConfig({
			...backend,
			egress: { policy: { kind: 'deny-all' }, profile: 'none' },
		})
		expect(resolved.egress?.profile).toEqual({
			key: DEFAULT_EGRESS_PROFILE_LABEL_KEY,
			value: 'none',
		})
	})

	it.each([
		['backend.egres', { egres: { policy: { kind: 'deny-all' } } }],
		['backend.defaultEgress', { defaultEgress: { kind: 'deny-all' } }],
		['egress.policies', { egress: { policy: { kind: 'deny-all' }, policies: [] } }],
		['egress.policy.allowedHosts', { egress: { policy: { kind: 'deny-all', allowedHosts: [] } } }],
		['egress.ciliumNarrowing.port', cilium({ port: 443 })],
		['ingress.engin', { ingress: { engin: 'cilium' } }],
		['egress.engine', { egress: { policy: { kind: 'deny-all' }, engine: 'calico' } }],
		['egress.verify', { egress: { policy: { kind: 'deny-all' }, verify: 'none' } }],
		['egress.policy.kind', { egress: { policy: { kind: 'block-all' } } }],
		['ingress.engine', { ingress: { engine: 'calico' } }],
	])(
		'refuses %s (unknown key or wrong shape) with SandboxConfigError naming it',
		(field, overrides) => {
			const error = refusal(overrides)
			expect(error).toBeInstanceOf(SandboxConfigError)
			expect(error).toMatchObject({ field })
		},
	)

	it('createSandboxProvider with egress set contacts nothing and asks for no token', () => {
		expect(() =>
			createSandboxProvider({
				backend: {
					...backend,
					egress: { engine: 'cilium', policy: { kind: 'resolver', resolve: async () => [] } },
				},
			}),
		).not.toThrow()
	})
})
