/**
 * The narrowing of a Cilium allowlist (ports, DNS names, TLS server names), shared by the
 * config-level allowlist (`egress.ciliumNarrowing`) and the per-sandbox one
 * (`egress.perSandbox.narrowing`): its types and its validation, pure. A refusal names the field
 * relative to `config.egress`, under whichever of the two it was given as.
 */
import { isRecord } from '../../../common/is-record.js'
import {
	CONFIG_SITE,
	describeReceived,
	refuseUnknownKeys,
} from '../../../contract/argument-validators.js'
import { KubernetesEgressPolicyConfigError } from './network-errors.js'

/** Where a narrowing is given, relative to `config.egress`. */
export type NarrowingField = 'ciliumNarrowing' | 'perSandbox.narrowing'

export const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/

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

export const NARROWING_KEYS = Object.keys({
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
/** An allowlist entry: a hostname, or `.domain`; letters any case. */
const HOST = /^\.?[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?$/

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

export function narrowingFields(value: Record<string, unknown>): string[] {
	return NARROWING_KEYS.filter(
		(key) => value[key] !== undefined && !(key === 'tlsServerNames' && value[key] === false),
	)
}

export function resolveNarrowing(
	value: Record<string, unknown>,
	namespace: string,
	base: NarrowingField = 'ciliumNarrowing',
): ResolvedCiliumNarrowing {
	const hostPortsValue = value.hostPorts
	const hostPorts: Record<string, readonly number[]> = {}
	if (hostPortsValue !== undefined) {
		if (!isRecord(hostPortsValue)) {
			throw new KubernetesEgressPolicyConfigError(
				`${base}.hostPorts`,
				`must be an object of hostnames to ports, got ${describeReceived(hostPortsValue)}`,
			)
		}
		for (const [host, list] of Object.entries(hostPortsValue)) {
			checkHosts(`${base}.hostPorts`, [host])
			hostPorts[host] = ports(`${base}.hostPorts.${host}`, list) ?? []
		}
	}
	if (value.tlsServerNames !== undefined && typeof value.tlsServerNames !== 'boolean') {
		throw new KubernetesEgressPolicyConfigError(
			`${base}.tlsServerNames`,
			`must be a boolean, got ${describeReceived(value.tlsServerNames)}`,
		)
	}
	const defaultPorts = ports(`${base}.ports`, value.ports)
	return {
		...(defaultPorts === undefined ? {} : { ports: defaultPorts }),
		hostPorts,
		tlsServerNames: value.tlsServerNames === true,
		tlsPorts: ports(`${base}.tlsPorts`, value.tlsPorts) ?? DEFAULT_TLS_PORTS,
		...(value.dnsNames === undefined
			? {}
			: { dnsNames: resolveDnsNames(value.dnsNames, namespace, base) }),
	}
}

function resolveDnsNames(
	value: unknown,
	namespace: string,
	base: NarrowingField,
): ResolvedCiliumNarrowing['dnsNames'] {
	if (value === true) {
		return { namespace, clusterDomain: DEFAULT_CLUSTER_DOMAIN, searchSuffixes: [] }
	}
	if (!isRecord(value)) {
		throw new KubernetesEgressPolicyConfigError(
			`${base}.dnsNames`,
			`must be true or { namespace?, clusterDomain?, searchSuffixes? }, got ${describeReceived(value)}`,
		)
	}
	refuseUnknownKeys(CONFIG_SITE, `egress.${base}.dnsNames`, value, DNS_NAMES_KEYS)
	const suffixes = value.searchSuffixes ?? []
	if (!Array.isArray(suffixes)) {
		throw new KubernetesEgressPolicyConfigError(
			`${base}.dnsNames.searchSuffixes`,
			`must be an array of DNS suffixes, got ${describeReceived(suffixes)}`,
		)
	}
	return {
		namespace:
			value.namespace === undefined
				? namespace
				: dnsSuffix(`${base}.dnsNames.namespace`, value.namespace),
		clusterDomain:
			value.clusterDomain === undefined
				? DEFAULT_CLUSTER_DOMAIN
				: dnsSuffix(`${base}.dnsNames.clusterDomain`, value.clusterDomain),
		searchSuffixes: suffixes.map((suffix, index) =>
			dnsSuffix(`${base}.dnsNames.searchSuffixes[${index}]`, suffix),
		),
	}
}
