import { describe, expect, it } from 'vitest'
import { resolveKubernetesBackendConfig } from '../../../../src/backends/kubernetes/kubernetes-backend-config.js'
import {
	createKubernetesWorkspace,
	DEFAULT_PER_SANDBOX_EGRESS_LABEL_KEY,
	type KubernetesBackendConfig,
	KubernetesEgressPolicyConfigError,
	KubernetesPerSandboxEgressConfigError,
	KubernetesWorkspacePerSandboxEgressConfigError,
	SandboxConfigError,
} from '../../../../src/index.js'
import { scriptedApi } from '../scripted-api-port.js'

const base: KubernetesBackendConfig = {
	tier: 'microvm',
	service: 'kubernetes',
	namespace: 'sandboxes',
	access: { server: 'https://127.0.0.1:1', getToken: async () => 't' },
	sandboxTemplateName: 'tpl',
}

const withPerSandbox = (perSandbox: unknown, extra: object = {}): KubernetesBackendConfig =>
	({
		...base,
		egress: { policy: { kind: 'deny-all' }, perSandbox, ...extra },
	}) as KubernetesBackendConfig

function refusal(config: KubernetesBackendConfig): unknown {
	try {
		resolveKubernetesBackendConfig(config)
	} catch (error) {
		return error
	}
	throw new Error('expected a refusal')
}

describe('egress.perSandbox', () => {
	it('R15-e2024bc-10: defaults the label key to DEFAULT_PER_SANDBOX_EGRESS_LABEL_KEY and resolves no narrowing', () => {
		const resolved = resolveKubernetesBackendConfig(withPerSandbox({}))
		expect(DEFAULT_PER_SANDBOX_EGRESS_LABEL_KEY).toBe('sandbox.namzu.ai/per-sandbox-egress')
		expect(resolved.egress?.perSandbox).toEqual({ labelKey: DEFAULT_PER_SANDBOX_EGRESS_LABEL_KEY })
	})

	it('without perSandbox the resolved egress carries no perSandbox key at all', () => {
		const resolved = resolveKubernetesBackendConfig({
			...base,
			egress: { policy: { kind: 'deny-all' } },
		})
		expect(resolved.egress).not.toHaveProperty('perSandbox')
	})

	it('R15-e2024bc-14: narrowing accepts the ciliumNarrowing options and resolves them the same way', () => {
		const narrowing = {
			ports: [443],
			hostPorts: { 'git.example.com': [22] },
			tlsServerNames: true,
			dnsNames: { searchSuffixes: ['corp.example'] },
		}
		const perSandbox = resolveKubernetesBackendConfig(withPerSandbox({ narrowing })).egress
			?.perSandbox
		const cilium = resolveKubernetesBackendConfig({
			...base,
			egress: {
				engine: 'cilium',
				policy: { kind: 'static', allowedHosts: ['a.example'] },
				ciliumNarrowing: narrowing,
			},
		}).egress?.narrowing
		expect(perSandbox?.narrowing).toEqual(cilium)
	})

	it('R15-e2024bc-04: engine core is refused synchronously with KubernetesPerSandboxEgressConfigError', () => {
		const error = refusal(withPerSandbox({ engine: 'core' }))
		expect(error).toBeInstanceOf(KubernetesPerSandboxEgressConfigError)
		expect(error).toMatchObject({
			field: 'perSandbox.engine',
			reason: 'invalid-per-sandbox-egress-config',
		})
		expect(String(error)).toContain('hostname')
	})

	it.each([
		['perSandbox.engine', { engine: 'calico' }],
		['perSandbox.labelKey', { labelKey: 'unprefixed' }],
		['perSandbox.labelKey', { labelKey: 'sandbox.namzu.ai/template' }],
		['perSandbox.labelKey', { labelKey: 7 }],
	])('refuses %s %j with KubernetesPerSandboxEgressConfigError', (field, perSandbox) => {
		const error = refusal(withPerSandbox(perSandbox))
		expect(error).toBeInstanceOf(KubernetesPerSandboxEgressConfigError)
		expect(error).toMatchObject({ field })
	})

	it('refuses a label key equal to the egress profile key', () => {
		const error = refusal(
			withPerSandbox({ labelKey: 'sandbox.namzu.ai/egress-profile' }, { profile: 'none' }),
		)
		expect(error).toBeInstanceOf(KubernetesPerSandboxEgressConfigError)
	})

	it.each([
		['perSandbox.narrowing.ports[0]', { ports: [0] }],
		['perSandbox.narrowing.tlsPorts', { tlsServerNames: true, tlsPorts: [] }],
		['perSandbox.narrowing.dnsNames.clusterDomain', { dnsNames: { clusterDomain: '' } }],
	])(
		'R15-e2024bc-25: a narrowing value is refused as %s, relative to config.egress',
		(field, narrowing) => {
			const error = refusal(withPerSandbox({ narrowing }))
			expect(error).toBeInstanceOf(KubernetesEgressPolicyConfigError)
			expect(error).toMatchObject({ field })
		},
	)

	it('refuses an unknown perSandbox key by name', () => {
		const error = refusal(withPerSandbox({ labelkey: 'a.b/c' }))
		expect(error).toBeInstanceOf(SandboxConfigError)
		expect(String(error)).toContain('labelkey')
	})

	it('R15-e2024bc-03: createKubernetesWorkspace refuses a config carrying perSandbox before any request', async () => {
		const api = scriptedApi(() => {
			throw new Error('no request expected')
		})
		await expect(
			createKubernetesWorkspace(withPerSandbox({}), { workspaceId: 'ws-1' }, { api: api.port }),
		).rejects.toBeInstanceOf(KubernetesWorkspacePerSandboxEgressConfigError)
		expect(api.log()).toEqual([])
	})
})
