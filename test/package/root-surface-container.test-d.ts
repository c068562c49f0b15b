/**
 * The container tier's public types, checked by the compiler: the two container arms of
 * `SandboxProviderConfig` (each pairs its backend with the layout it needs), a complete ACI
 * standby-pool call that compiles with no cast, the other arms unchanged, and the tier's errors,
 * each a `SandboxError`. `vitest --typecheck` runs this file; nothing here executes.
 */
import { describe, expectTypeOf, it } from 'vitest'
import type * as container from '../../src/container-entry.js'
import type * as root from '../../src/index.js'
import { createSandboxProvider } from '../../src/index.js'

type Instance<T> = T extends abstract new (...args: never[]) => infer I ? I : never

const layout: root.ContainerSandboxLayout = {
	outputs: { source: { type: 'hostDir', hostPath: '/srv/out' } },
	skills: [{ id: 'pdf', source: { type: 'inImage' } }],
}

const aci: root.ACIStandbyPoolBackendConfig = {
	tier: 'container',
	runtime: 'aci-standby-pool',
	subscriptionId: 'sub',
	resourceGroup: 'rg',
	location: 'westeurope',
	standbyPoolResourceId: '/pool',
	containerGroupProfileResourceId: '/profile',
	getArmToken: async () => 'token',
}

type AciArm = Extract<root.SandboxProviderConfig, { backend: root.ACIStandbyPoolBackendConfig }>
type ContainerArm = Extract<root.SandboxProviderConfig, { backend: root.ContainerBackendConfig }>

describe('package root: the container arms of SandboxProviderConfig', () => {
	it('has an arm whose backend is ACIStandbyPoolBackendConfig, selected by tier container and runtime aci-standby-pool', () => {
		expectTypeOf<AciArm['backend']['tier']>().toEqualTypeOf<'container'>()
		expectTypeOf<AciArm['backend']['runtime']>().toEqualTypeOf<'aci-standby-pool'>()
		expectTypeOf<root.ACIStandbyPoolBackendConfig>().toExtend<root.SandboxBackendConfig>()
	})

	it('pairs the ACI standby-pool backend with a ContainerSandboxLayout, as the plain container arm does, and refuses it without one', () => {
		expectTypeOf<AciArm['layout']>().toEqualTypeOf<root.ContainerSandboxLayout>()
		expectTypeOf<ContainerArm['layout']>().toEqualTypeOf<root.ContainerSandboxLayout>()
		expectTypeOf({ backend: aci }).not.toExtend<root.SandboxProviderConfig>()
		expectTypeOf({ backend: aci, layout }).toExtend<root.SandboxProviderConfig>()
		expectTypeOf({
			backend: { tier: 'container' as const, image: '/img' },
		}).not.toExtend<root.SandboxProviderConfig>()
	})

	it('compiles a createSandboxProvider call with a complete ACI config and layout, no cast of any kind', () => {
		const make = () =>
			createSandboxProvider({
				backend: {
					tier: 'container',
					runtime: 'aci-standby-pool',
					subscriptionId: 'sub',
					resourceGroup: 'rg',
					location: 'westeurope',
					standbyPoolResourceId: '/pool',
					containerGroupProfileResourceId: '/profile',
					containerGroupProfileRevision: 1,
					getArmToken: async () => 'token',
					subnetId: '/subnet',
				},
				layout: { outputs: { source: { type: 'inImage' } } },
			})
		expectTypeOf(make).returns.toExtend<root.SandboxProvider>()
	})

	it('keeps the container, microVM-Kubernetes and local arms: their literals still compile', () => {
		expectTypeOf({
			backend: { tier: 'container' as const, image: '/img', runtime: 'runsc' as const },
			layout,
			defaultTimeoutMs: 5,
		}).toExtend<root.SandboxProviderConfig>()
		expectTypeOf({
			backend: { tier: 'container' as const, image: '/img', runtime: 'docker' as const },
			layout,
		}).toExtend<root.SandboxProviderConfig>()
		expectTypeOf({ backend: { tier: 'process' as const } }).toExtend<root.SandboxProviderConfig>()
		expectTypeOf<root.KubernetesBackendConfig>().toExtend<root.SandboxBackendConfig>()
		expectTypeOf<root.LocalBackendConfig>().toExtend<root.SandboxBackendConfig>()
	})

	it('lets consumer type-level code extract the ACI standby-pool arm as a non-never type', () => {
		expectTypeOf<AciArm>().not.toBeNever()
		expectTypeOf<
			Extract<root.SandboxBackendConfig, { runtime: 'aci-standby-pool' }>
		>().toEqualTypeOf<root.ACIStandbyPoolBackendConfig>()
	})
})

describe('package root: the container tier', () => {
	it('exports the container errors, each a SandboxError', () => {
		expectTypeOf<
			Instance<typeof container.ContainerSandboxLayoutValidationError>
		>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof root.ContainerRuntimeUnavailableError>
		>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof container.ContainerRuntimeCommandError>
		>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof container.ContainerEgressUnsupportedError>
		>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof container.ContainerProviderClosedError>
		>().toExtend<root.SandboxError>()
		expectTypeOf<
			Instance<typeof container.ContainerSandboxLayoutValidationError>['reasons']
		>().toEqualTypeOf<readonly string[]>()
	})

	it('exports resolveLayout, whose result has every containerPath filled', () => {
		expectTypeOf<
			ReturnType<typeof container.resolveLayout>
		>().toEqualTypeOf<container.ResolvedContainerSandboxLayout>()
		expectTypeOf<container.ResolvedContainerMount['containerPath']>().toEqualTypeOf<string>()
		expectTypeOf<container.ContainerRuntime>().toEqualTypeOf<'runc' | 'crun' | 'runsc'>()
	})
})
