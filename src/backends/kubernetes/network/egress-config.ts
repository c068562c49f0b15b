/**
 * `config.egress` of the Kubernetes backend: its types and its validation, pure and synchronous, so
 * every refusal lands while the backend is built — before a single request. Each refusal is its own
 * class: a hostname allowlist the core engine cannot enforce, narrowing beside something it cannot
 * narrow, a value that is not what it must be (a CIDR, a port, a DNS suffix), a profile this
 * backend will not write onto a pod. Unknown keys are refused by name, like everywhere else.
 */
import {
	CONFIG_SITE,
	describeReceived,
	refuseUnknownKeys,
	requireObject,
	requireOneOf,
} from '../../../contract/argument-validators.js'
import type { EgressPolicy } from '../../../contract/egress.js'
import { SandboxConfigError } from '../../../contract/errors.js'
import { TEMPLATE_LABEL } from '../kubernetes-objects.js'
import { parseCidr } from './cidr.js'
import {
	checkHosts,
	DNS_SUBDOMAIN,
	type KubernetesCiliumNarrowing,
	NARROWING_KEYS,
	narrowingFields,
	type ResolvedCiliumNarrowing,
	resolveNarrowing,
} from './cilium-narrowing-config.js'
import {
	KubernetesEgressNarrowingUnsupportedError,
	KubernetesEgressPolicyConfigError,
	KubernetesEgressProfileConfigError,
	KubernetesUnenforceableEgressPolicyError,
} from './network-errors.js'
import {
	type KubernetesPerSandboxEgressConfig,
	type ResolvedPerSandboxEgress,
	resolvePerSandboxEgress,
} from './per-sandbox-config.js'

export {
	checkHosts,
	DEFAULT_CLUSTER_DOMAIN,
	DEFAULT_TLS_PORTS,
	type KubernetesCiliumDnsNames,
	type KubernetesCiliumNarrowing,
	type ResolvedCiliumNarrowing,
} from './cilium-narrowing-config.js'

export type KubernetesEgressEngine = 'core' | 'cilium'
export type KubernetesEgressVerification = 'union' | 'named-object-only'

/** Kinds only this tier has: nothing at all leaves, or out to the internet but not sideways. */
export type KubernetesOnlyEgressPolicy =
	| { readonly kind: 'no-network' }
	| { readonly kind: 'public-internet'; readonly exceptCidrs?: readonly string[] }

/** The tier-wide `EgressPolicy` plus the Kubernetes-only kinds. */
export type KubernetesEgressPolicy = EgressPolicy | KubernetesOnlyEgressPolicy

export interface KubernetesEgressConfig {
	readonly policy: KubernetesEgressPolicy
	/** The operator-applied policy verified, default `${sandboxTemplateName}-egress`. */
	readonly networkPolicyName?: string
	/** Default `core`. */
	readonly engine?: KubernetesEgressEngine
	/** Default `union`: the named object exactly, then every policy selecting the pod. */
	readonly verify?: KubernetesEgressVerification
	readonly ciliumNarrowing?: KubernetesCiliumNarrowing
	/** A DNS-1123 label value written onto the pod under `profileLabelKey`. */
	readonly profile?: string
	/** Default `DEFAULT_EGRESS_PROFILE_LABEL_KEY`. */
	readonly profileLabelKey?: string
	/** Live `setNetworkPolicy` on task sandboxes, one CiliumNetworkPolicy each. */
	readonly perSandbox?: KubernetesPerSandboxEgressConfig
}

export const DEFAULT_EGRESS_PROFILE_LABEL_KEY = 'sandbox.namzu.ai/egress-profile'
export interface ResolvedEgressConfig {
	readonly policy: KubernetesEgressPolicy
	readonly networkPolicyName: string
	readonly engine: KubernetesEgressEngine
	readonly verify: KubernetesEgressVerification
	/** Present only when a narrowing field is set. */
	readonly narrowing?: ResolvedCiliumNarrowing
	readonly profile?: { readonly key: string; readonly value: string }
	readonly perSandbox?: ResolvedPerSandboxEgress
}

const EGRESS_KEYS = Object.keys({
	policy: true,
	networkPolicyName: true,
	engine: true,
	verify: true,
	ciliumNarrowing: true,
	profile: true,
	profileLabelKey: true,
	perSandbox: true,
} satisfies Record<keyof KubernetesEgressConfig, true>)
const POLICY_KEYS: Readonly<Record<string, readonly string[]>> = {
	'deny-all': ['kind'],
	'allow-all': ['kind'],
	'no-network': ['kind'],
	'public-internet': ['kind', 'exceptCidrs'],
	static: ['kind', 'allowedHosts'],
	resolver: ['kind', 'resolve'],
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/
const LABEL_KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/
/** The policy's shape: an object with a known `kind` and only that kind's keys. */
function checkPolicy(value: unknown): KubernetesEgressPolicy {
	const policy = requireObject(CONFIG_SITE, 'egress.policy', value)
	const kind = requireOneOf(
		CONFIG_SITE,
		'egress.policy.kind',
		policy.kind,
		Object.keys(POLICY_KEYS),
	)
	refuseUnknownKeys(CONFIG_SITE, 'egress.policy', policy, POLICY_KEYS[kind] ?? ['kind'])
	if (kind === 'static') {
		const hosts = policy.allowedHosts
		if (!Array.isArray(hosts)) {
			throw new KubernetesEgressPolicyConfigError(
				'policy.allowedHosts',
				`must be an array of hostnames, got ${describeReceived(hosts)}`,
			)
		}
		checkHosts('policy.allowedHosts', hosts)
	}
	if (kind === 'resolver' && typeof policy.resolve !== 'function') {
		throw new KubernetesEgressPolicyConfigError(
			'policy.resolve',
			`must be a function returning the allowed hostnames, got ${describeReceived(policy.resolve)}`,
		)
	}
	if (kind === 'public-internet' && policy.exceptCidrs !== undefined) {
		const cidrs = policy.exceptCidrs
		if (!Array.isArray(cidrs)) {
			throw new KubernetesEgressPolicyConfigError(
				'policy.exceptCidrs',
				`must be an array of CIDRs, got ${describeReceived(cidrs)}`,
			)
		}
		cidrs.forEach((entry, index) => {
			if (parseCidr(entry) === undefined) {
				throw new KubernetesEgressPolicyConfigError(
					`policy.exceptCidrs[${index}]`,
					`must be an IPv4 or IPv6 CIDR such as 203.0.113.0/24, got ${describeReceived(entry)}`,
				)
			}
		})
	}
	return value as KubernetesEgressPolicy
}

function resolveProfile(
	given: Record<string, unknown>,
	templateName: string,
): ResolvedEgressConfig['profile'] {
	const key = given.profileLabelKey ?? DEFAULT_EGRESS_PROFILE_LABEL_KEY
	if (typeof key !== 'string' || key.length > 317 || !LABEL_KEY.test(key)) {
		throw new KubernetesEgressProfileConfigError(
			'profileLabelKey',
			`must be a label key such as ${DEFAULT_EGRESS_PROFILE_LABEL_KEY}, got ${describeReceived(key)}`,
		)
	}
	if (key === TEMPLATE_LABEL) {
		throw new KubernetesEgressProfileConfigError(
			'profileLabelKey',
			`must not be ${TEMPLATE_LABEL}: the profile would overwrite the template label`,
		)
	}
	if (given.profile === undefined) return undefined
	const value = given.profile
	if (typeof value !== 'string' || value.length > 63 || !DNS_LABEL.test(value)) {
		throw new KubernetesEgressProfileConfigError(
			'profile',
			`must be a DNS-1123 label (lower-case letters, digits, '-', at most 63), got ${describeReceived(value)}`,
		)
	}
	const policyName = `${templateName}-${value}-egress`
	if (given.networkPolicyName === undefined && policyName.length > 253) {
		throw new KubernetesEgressProfileConfigError(
			'profile',
			`makes the policy name ${templateName}-${value}-egress longer than 253 characters`,
		)
	}
	return { key, value }
}

/** Validates `config.egress` (see the module comment); `undefined` when it is not set. */
export function resolveEgressConfig(
	value: unknown,
	context: { readonly namespace: string; readonly sandboxTemplateName: string },
): ResolvedEgressConfig | undefined {
	if (value === undefined) return undefined
	const given = requireObject(CONFIG_SITE, 'egress', value)
	refuseUnknownKeys(CONFIG_SITE, 'egress', given, EGRESS_KEYS)
	const policy = checkPolicy(given.policy)
	const engine = requireOneOf(CONFIG_SITE, 'egress.engine', given.engine ?? 'core', [
		'core',
		'cilium',
	] as const)
	const verify = requireOneOf(CONFIG_SITE, 'egress.verify', given.verify ?? 'union', [
		'union',
		'named-object-only',
	] as const)
	const allowlist = policy.kind === 'static' || policy.kind === 'resolver'
	if (allowlist && engine === 'core')
		throw new KubernetesUnenforceableEgressPolicyError(policy.kind)
	let narrowing: ResolvedCiliumNarrowing | undefined
	if (given.ciliumNarrowing !== undefined) {
		const raw = requireObject(CONFIG_SITE, 'egress.ciliumNarrowing', given.ciliumNarrowing)
		refuseUnknownKeys(CONFIG_SITE, 'egress.ciliumNarrowing', raw, NARROWING_KEYS)
		const set = narrowingFields(raw)
		const first = set[0]
		if (first !== undefined) {
			if (!allowlist || engine !== 'cilium') {
				throw new KubernetesEgressNarrowingUnsupportedError(
					`ciliumNarrowing.${first}`,
					engine,
					policy.kind,
				)
			}
			narrowing = resolveNarrowing(raw, context.namespace)
		}
	}
	const profile = resolveProfile(given, context.sandboxTemplateName)
	const perSandbox = resolvePerSandboxEgress(given.perSandbox, {
		namespace: context.namespace,
		...(profile === undefined ? {} : { profileLabelKey: profile.key }),
	})
	const networkPolicyName =
		given.networkPolicyName === undefined
			? profile === undefined
				? `${context.sandboxTemplateName}-egress`
				: `${context.sandboxTemplateName}-${profile.value}-egress`
			: given.networkPolicyName
	if (
		typeof networkPolicyName !== 'string' ||
		networkPolicyName.length > 253 ||
		!DNS_SUBDOMAIN.test(networkPolicyName)
	) {
		throw new SandboxConfigError(
			'egress.networkPolicyName',
			`must be a DNS-1123 name of at most 253 characters, got ${describeReceived(networkPolicyName)}`,
		)
	}
	return {
		policy,
		networkPolicyName,
		engine,
		verify,
		...(narrowing === undefined ? {} : { narrowing }),
		...(profile === undefined ? {} : { profile }),
		...(perSandbox === undefined ? {} : { perSandbox }),
	}
}
