/**
 * The Kubernetes egress names at the package root, checked by the compiler: the engine is exactly
 * the two strings, and the config's fields have the spec's types and optionality.
 */
import { describe, expectTypeOf, it } from 'vitest'
import type * as root from '../../src/index.js'

type IsRequired<T, K extends keyof T> = object extends Pick<T, K> ? false : true

describe('package root: the Kubernetes egress names', () => {
	it('KubernetesEgressEngine is exactly core or cilium', () => {
		expectTypeOf<root.KubernetesEgressEngine>().toEqualTypeOf<'core' | 'cilium'>()
	})

	it('KubernetesEgressConfig takes a required policy, an optional networkPolicyName and engine', () => {
		expectTypeOf<IsRequired<root.KubernetesEgressConfig, 'policy'>>().toEqualTypeOf<true>()
		expectTypeOf<
			root.KubernetesEgressConfig['policy']
		>().toEqualTypeOf<root.KubernetesEgressPolicy>()
		expectTypeOf<root.EgressPolicy>().toExtend<root.KubernetesEgressConfig['policy']>()
		expectTypeOf<
			IsRequired<root.KubernetesEgressConfig, 'networkPolicyName'>
		>().toEqualTypeOf<false>()
		expectTypeOf<root.KubernetesEgressConfig['networkPolicyName']>().toEqualTypeOf<
			string | undefined
		>()
		expectTypeOf<IsRequired<root.KubernetesEgressConfig, 'engine'>>().toEqualTypeOf<false>()
		expectTypeOf<root.KubernetesEgressConfig['engine']>().toEqualTypeOf<
			root.KubernetesEgressEngine | undefined
		>()
	})

	it('KubernetesBackendConfig takes egress as an optional KubernetesEgressConfig', () => {
		expectTypeOf<IsRequired<root.KubernetesBackendConfig, 'egress'>>().toEqualTypeOf<false>()
		expectTypeOf<root.KubernetesBackendConfig['egress']>().toEqualTypeOf<
			root.KubernetesEgressConfig | undefined
		>()
	})
})
