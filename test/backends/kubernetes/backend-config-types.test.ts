// The Kubernetes arm of the public config types, checked by the compiler (`tsc` covers test/): the
// two exported types, the arm in both unions, a `createSandboxProvider` call with no cast, and the
// local arm left exactly as it was. The runtime halves only confirm the selector routes each arm.
import { describe, expect, expectTypeOf, it } from 'vitest'
import { LOCAL_PROVIDER_ID } from '../../../src/backends/local/local-sandbox-provider.js'
import {
	type ACIStandbyPoolBackendConfig,
	type ContainerBackendConfig,
	createSandboxProvider,
	type KubernetesBackendConfig,
	type KubernetesClusterAccess,
	type LocalBackendConfig,
	type MicroVMBackendConfig,
	type SandboxBackendConfig,
	type SandboxProviderConfig,
} from '../../../src/index.js'

describe('the Kubernetes arm of the config types', () => {
	it('exports KubernetesBackendConfig and KubernetesClusterAccess from the package root', () => {
		expectTypeOf<KubernetesBackendConfig['tier']>().toEqualTypeOf<'microvm'>()
		expectTypeOf<KubernetesBackendConfig['service']>().toEqualTypeOf<'kubernetes'>()
		expectTypeOf<KubernetesBackendConfig['access']>().toEqualTypeOf<KubernetesClusterAccess>()
		expectTypeOf({ inCluster: true as const }).toExtend<KubernetesClusterAccess>()
		expectTypeOf({
			server: 'https://k8s.example',
			ca: '-----BEGIN CERTIFICATE-----',
			getToken: () => 'token',
		}).toExtend<KubernetesClusterAccess>()
		expectTypeOf({ server: 'https://k8s.example' }).not.toExtend<KubernetesClusterAccess>()
	})

	it('adds a kubernetes arm to SandboxBackendConfig and SandboxProviderConfig that createSandboxProvider takes without a cast', () => {
		expectTypeOf<
			Extract<SandboxBackendConfig, { service: 'kubernetes' }>
		>().toEqualTypeOf<KubernetesBackendConfig>()
		expectTypeOf<KubernetesBackendConfig>().toExtend<SandboxProviderConfig['backend']>()
		const provider = createSandboxProvider({
			backend: {
				tier: 'microvm',
				service: 'kubernetes',
				namespace: 'sandboxes',
				access: { server: 'https://k8s.example', getToken: () => 'token' },
				sandboxTemplateName: 'task',
				warmPoolName: 'pool',
			},
		})
		expect(provider.name).toBe('kubernetes')
	})

	it('leaves the local arm exactly LocalBackendConfig, still routed to the local provider', () => {
		expectTypeOf<
			Extract<SandboxBackendConfig, { tier: 'process' }>
		>().toEqualTypeOf<LocalBackendConfig>()
		expectTypeOf<SandboxBackendConfig>().toEqualTypeOf<
			| LocalBackendConfig
			| KubernetesBackendConfig
			| MicroVMBackendConfig
			| ContainerBackendConfig
			| ACIStandbyPoolBackendConfig
		>()
		expect(createSandboxProvider({ backend: { tier: 'process' } }).id).toBe(LOCAL_PROVIDER_ID)
	})
})
