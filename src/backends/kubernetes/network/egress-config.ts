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
	isPlainObject,
	refuseUnknownKeys,
	requireObject,
	requireOneOf,
} from '../../../contract/argument-validators.js'
import type { EgressPolicy } from '../../../contract/egress.js'
import { SandboxConfigError } from '../../../contract/errors.js'
import { TEMPLATE_LABEL } from '../kubernetes-objects.js'
import { parseCidr } from './cidr.js'
import {
	KubernetesEgressNarrowingUnsupportedError,
	KubernetesEgressPolicyConfigError,
	KubernetesEgressProfileConfigError,
	KubernetesUnenforceableEgressPolicyError,
} from './network-errors.js'

export type KubernetesEgressEngine = 'core' | 'cilium'
export type KubernetesEgressVerification = 'union' | 'named-object-only'

/** Kinds only this tier has: nothing at all leaves, or out to the internet but not sideways. */
export type KubernetesOnlyEgressPolicy =
	| { readonly kind: 'no-network' }
	| { readonly kind: 'public-internet'; readonly exceptCidrs?: readonly string[] }

/** The tier-wide `EgressPolicy` plus the Kubernetes-only kinds. */
export type KubernetesEgressPolicy = EgressPolicy | KubernetesOnlyEgressPolicy

export interface KubernetesCiliumDnsNames {
	/** Default: the backend's namespace. */
	readonly namespace?: string
	/** Default `cluster.local`. */
	readonly clusterDomain?: string
	/** Extra resolver search suffixes each allowed host is also allowed under. */
	readonly searchSuffixes?: readonly string[]
}

/** Narrowing of a `static`/`resolver` allowlist under `engine: 'cilium'`; all opt-in. */
export interface KubernetesCiliumNarrowing {
	/** Ports every allowed host is limited to (TCP). */
	readonly ports?: readonly number[]
	/** Per-host overrides of `ports`. */
	readonly hostPorts?: Readonly<Record<string, readonly number[]>>
	/** `serverNames: [<host>]` on each host's TLS ports (needs Cilium's L7 proxy). */
	readonly tlsServerNames?: boolean
	/** The TLS ports, default `[443]`. */
	readonly tlsPorts?: readonly number[]
	/** Only the allowed hosts resolve: exact `matchName`s instead of `matchPattern: '*'`. */
	readonly dnsNames?: true | KubernetesCiliumDnsNames
}

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
}

export const DEFAULT_EGRESS_PROFILE_LABEL_KEY = 'sandbox.namzu.ai/egress-profile'
export const DEFAULT_CLUSTER_DOMAIN = 'cluster.local'
export const DEFAULT_TLS_PORTS: readonly number[] = Object.freeze([443])

export interface ResolvedCiliumNarrowing {
	readonly ports?: readonly number[]
	readonly hostPorts: Readonly<Record<string, readonly number[]>>
	readonly tlsServerNames: boolean
	readonly tlsPorts: readonly number[]
	readonly dnsNames?: {
		readonly namespace: string
		readonly clusterDomain: string
		readonly searchSuffixes: readonly string[]
	}
}

export interface ResolvedEgressConfig {
	readonly policy: KubernetesEgressPolicy
	readonly networkPolicyName: string
	readonly engine: KubernetesEgressEngine
	readonly verify: KubernetesEgressVerification
	/** Present only when a narrowing field is set. */
	readonly narrowing?: ResolvedCiliumNarrowing
	readonly profile?: { readonly key: string; readonly value: string }
}

const EGRESS_KEYS = Object.keys({
	policy: true,
	networkPolicyName: true,
	engine: true,
	verify: true,
	ciliumNarrowing: true,
	profile: true,
	profileLabelKey: true,
} satisfies Record<keyof KubernetesEgressConfig, true>)
const NARROWING_KEYS = Object.keys({
	ports: true,
	hostPorts: true,
	tlsServerNames: true,
	tlsPorts: true,
	dnsNames: true,
} satisfies Record<keyof KubernetesCiliumNarrowing, true>)
const DNS_NAMES_KEYS = Object.keys({
	namespace: true,
	clusterDomain: true,
	searchSuffixes: true,
} satisfies Record<keyof KubernetesCiliumDnsNames, true>)
const POLICY_KEYS: Readonly<Record<string, readonly string[]>> = {
	'deny-all': ['kind'],
	'allow-all': ['kind'],
	'no-network': ['kind'],
	'public-internet': ['kind', 'exceptCidrs'],
	static: ['kind', 'allowedHosts'],
	resolver: ['kind', 'resolve'],
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/
const LABEL_KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/
/** An allowlist entry: a hostname, or `.domain`; letters any case. */
const HOST = /^\.?[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?$/

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

/** Hostname allowlist entries (static at construction, a resolver's answer at verification). */
export function checkHosts(field: string, hosts: readonly unknown[]): readonly string[] {
	hosts.forEach((host, index) => {
		if (typeof host !== 'string' || host.length > 253 || !HOST.test(host)) {
			throw new KubernetesEgressPolicyConfigError(
				`${field}[${index}]`,
				`must be a hostname, got ${describeReceived(host)}`,
			)
		}
	})
	return hosts as readonly string[]
}

function ports(field: string, value: unknown): readonly number[] | undefined {
	if (value === undefined) return undefined
	if (!Array.isArray(value)) {
		throw new KubernetesEgressPolicyConfigError(
			field,
			`must be an array of ports, got ${describeReceived(value)}`,
		)
	}
	if (value.length === 0) {
		throw new KubernetesEgressPolicyConfigError(
			field,
			'must not be empty: omit it for no restriction',
		)
	}
	value.forEach((port, index) => {
		if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65_535) {
			throw new KubernetesEgressPolicyConfigError(
				`${field}[${index}]`,
				`must be a port in 1-65535, got ${describeReceived(port)}`,
			)
		}
	})
	return [...new Set(value as number[])]
}

function dnsSuffix(field: string, value: unknown): string {
	if (typeof value !== 'string' || value === '' || !DNS_SUBDOMAIN.test(value)) {
		throw new KubernetesEgressPolicyConfigError(
			field,
			`must be a non-empty DNS name, got ${describeReceived(value)}`,
		)
	}
	return value
}

function narrowingFields(value: Record<string, unknown>): string[] {
	return NARROWING_KEYS.filter(
		(key) => value[key] !== undefined && !(key === 'tlsServerNames' && value[key] === false),
	)
}

function resolveNarrowing(
	value: Record<string, unknown>,
	namespace: string,
): ResolvedCiliumNarrowing {
	const hostPortsValue = value.hostPorts
	const hostPorts: Record<string, readonly number[]> = {}
	if (hostPortsValue !== undefined) {
		if (!isPlainObject(hostPortsValue)) {
			throw new KubernetesEgressPolicyConfigError(
				'ciliumNarrowing.hostPorts',
				`must be an object of hostnames to ports, got ${describeReceived(hostPortsValue)}`,
			)
		}
		for (const [host, list] of Object.entries(hostPortsValue)) {
			checkHosts('ciliumNarrowing.hostPorts', [host])
			hostPorts[host] = ports(`ciliumNarrowing.hostPorts.${host}`, list) ?? []
		}
	}
	if (value.tlsServerNames !== undefined && typeof value.tlsServerNames !== 'boolean') {
		throw new KubernetesEgressPolicyConfigError(
			'ciliumNarrowing.tlsServerNames',
			`must be a boolean, got ${describeReceived(value.tlsServerNames)}`,
		)
	}
	const defaultPorts = ports('ciliumNarrowing.ports', value.ports)
	return {
		...(defaultPorts === undefined ? {} : { ports: defaultPorts }),
		hostPorts,
		tlsServerNames: value.tlsServerNames === true,
		tlsPorts: ports('ciliumNarrowing.tlsPorts', value.tlsPorts) ?? DEFAULT_TLS_PORTS,
		...(value.dnsNames === undefined
			? {}
			: { dnsNames: resolveDnsNames(value.dnsNames, namespace) }),
	}
}

function resolveDnsNames(value: unknown, namespace: string): ResolvedCiliumNarrowing['dnsNames'] {
	if (value === true) {
		return { namespace, clusterDomain: DEFAULT_CLUSTER_DOMAIN, searchSuffixes: [] }
	}
	if (!isPlainObject(value)) {
		throw new KubernetesEgressPolicyConfigError(
			'ciliumNarrowing.dnsNames',
			`must be true or { namespace?, clusterDomain?, searchSuffixes? }, got ${describeReceived(value)}`,
		)
	}
	refuseUnknownKeys(CONFIG_SITE, 'egress.ciliumNarrowing.dnsNames', value, DNS_NAMES_KEYS)
	const suffixes = value.searchSuffixes ?? []
	if (!Array.isArray(suffixes)) {
		throw new KubernetesEgressPolicyConfigError(
			'ciliumNarrowing.dnsNames.searchSuffixes',
			`must be an array of DNS suffixes, got ${describeReceived(suffixes)}`,
		)
	}
	return {
		namespace:
			value.namespace === undefined
				? namespace
				: dnsSuffix('ciliumNarrowing.dnsNames.namespace', value.namespace),
		clusterDomain:
			value.clusterDomain === undefined
				? DEFAULT_CLUSTER_DOMAIN
				: dnsSuffix('ciliumNarrowing.dnsNames.clusterDomain', value.clusterDomain),
		searchSuffixes: suffixes.map((suffix, index) =>
			dnsSuffix(`ciliumNarrowing.dnsNames.searchSuffixes[${index}]`, suffix),
		),
	}
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
	}
}
