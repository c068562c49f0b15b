/**
 * `config.ingress` of the Kubernetes backend: verification of the agent port is on unless the
 * caller says `'unverified'` on purpose (a boundary a namespaced Role cannot read: a cluster-scoped
 * policy, a mesh, a cloud security group). `{ engine: 'cilium' }` reads Cilium's policies too.
 */
import {
	CONFIG_SITE,
	refuseUnknownKeys,
	requireObject,
	requireOneOf,
} from '../../../contract/argument-validators.js'

export type KubernetesIngressEngine = 'core' | 'cilium'

export type KubernetesIngressConfig = 'unverified' | { readonly engine?: KubernetesIngressEngine }

export type ResolvedIngressConfig =
	| { readonly verify: false }
	| { readonly verify: true; readonly engine: KubernetesIngressEngine }

export function resolveIngressConfig(value: unknown): ResolvedIngressConfig {
	if (value === undefined) return { verify: true, engine: 'core' }
	if (value === 'unverified') return { verify: false }
	const given = requireObject(CONFIG_SITE, 'ingress', value)
	refuseUnknownKeys(CONFIG_SITE, 'ingress', given, ['engine'])
	const engine = requireOneOf(CONFIG_SITE, 'ingress.engine', given.engine ?? 'core', [
		'core',
		'cilium',
	] as const)
	return { verify: true, engine }
}
