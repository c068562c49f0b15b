/**
 * `config.egress` → the one policy object an operator applies and this backend verifies, plus the
 * allowance the union check measures every other selecting policy against. Pure. The objects are
 * pinned by deep-equality tests: verification of the named object is an exact match, so changing
 * a translation would stop every already-applied policy from verifying.
 *
 * Every translation but `no-network` keeps the cluster's resolver reachable; `deny-all` allows
 * exactly UDP and TCP 53 to `kube-system`, nothing else.
 */
import { TEMPLATE_LABEL } from '../kubernetes-objects.js'
import { type Cidr, parseCidr } from './cidr.js'
import type { ResolvedCiliumNarrowing, ResolvedEgressConfig } from './egress-config.js'
import type { KubernetesPolicyKind } from './network-errors.js'
import { KubernetesNetworkPolicyHostError } from './per-sandbox-errors.js'

export const NETWORK_POLICY_API_VERSION = 'networking.k8s.io/v1'
export const CILIUM_POLICY_API_VERSION = 'cilium.io/v2'
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name'
export const CLUSTER_DNS_NAMESPACE = 'kube-system'
export const CLUSTER_DNS_POD_LABELS: Readonly<Record<string, string>> = { 'k8s-app': 'kube-dns' }

/** Out, but not sideways: RFC 1918, CGNAT, link-local (metadata), loopback, Azure's wire server. */
export const PUBLIC_INTERNET_IPV4_EXCEPT: readonly string[] = Object.freeze([
	'10.0.0.0/8',
	'172.16.0.0/12',
	'192.168.0.0/16',
	'100.64.0.0/10',
	'169.254.0.0/16',
	'127.0.0.0/8',
	'168.63.129.16/32',
])
export const PUBLIC_INTERNET_IPV6_EXCEPT: readonly string[] = Object.freeze([
	'fc00::/7',
	'fe80::/10',
	'::1/128',
])

type Json = Record<string, unknown>

export interface TranslatedEgressPolicy {
	readonly kind: KubernetesPolicyKind
	readonly apiVersion: string
	readonly name: string
	/** The whole `spec` the applied object must carry. */
	readonly spec: Json
	readonly allowance: EgressAllowance
}

/** Per allowed hostname: the ports it may be reached on (absent: any) and which need SNI. */
export interface HostAllowance {
	readonly ports?: readonly number[]
	/** Ports on which the translation requires `serverNames: [host]`. */
	readonly serverNamePorts: readonly number[]
}

/** What the translation lets out, in the terms the union check compares against. */
export type EgressAllowance =
	| { readonly kind: 'everything' }
	| { readonly kind: 'nothing' }
	/** UDP/TCP 53 to any pod of `kube-system`. */
	| { readonly kind: 'cluster-dns' }
	/** DNS to the resolver's pods, and every address outside the except lists. */
	| {
			readonly kind: 'public-internet'
			readonly except: readonly Cidr[]
	  }
	/** DNS (restricted to `dnsNames` when set) and the hosts, each on its ports. */
	| {
			readonly kind: 'hostnames'
			readonly hosts: ReadonlyMap<string, HostAllowance>
			/** The exact names lookups are restricted to; absent: any name resolves. */
			readonly dnsNames?: readonly string[]
	  }

/** The labels every translated policy selects by: the template label, plus the profile. */
export function policySelectorLabels(
	templateName: string,
	egress: Pick<ResolvedEgressConfig, 'profile'>,
): Record<string, string> {
	return {
		[TEMPLATE_LABEL]: templateName,
		...(egress.profile === undefined ? {} : { [egress.profile.key]: egress.profile.value }),
	}
}

function clusterDnsRule(): Json {
	return {
		to: [{ namespaceSelector: { matchLabels: { [NAMESPACE_NAME_LABEL]: CLUSTER_DNS_NAMESPACE } } }],
		ports: [
			{ protocol: 'UDP', port: 53 },
			{ protocol: 'TCP', port: 53 },
		],
	}
}

function resolverPodsRule(): Json {
	return {
		to: [
			{
				namespaceSelector: { matchLabels: { [NAMESPACE_NAME_LABEL]: CLUSTER_DNS_NAMESPACE } },
				podSelector: { matchLabels: { ...CLUSTER_DNS_POD_LABELS } },
			},
		],
		ports: [
			{ protocol: 'UDP', port: 53 },
			{ protocol: 'TCP', port: 53 },
		],
	}
}

function exceptLists(extra: readonly string[]): { v4: string[]; v6: string[] } {
	const v4 = [...PUBLIC_INTERNET_IPV4_EXCEPT]
	const v6 = [...PUBLIC_INTERNET_IPV6_EXCEPT]
	for (const entry of extra) {
		const family = parseCidr(entry)?.family
		const list = family === 6 ? v6 : v4
		if (!list.includes(entry)) list.push(entry)
	}
	return { v4, v6 }
}

function corePolicy(selector: Json, egress: Json[] | undefined): Json {
	return {
		podSelector: { matchLabels: selector },
		policyTypes: ['Egress'],
		...(egress === undefined ? {} : { egress }),
	}
}

/** The kube-dns rule of every Cilium translation, restricted to `dns` selectors when given. */
export function ciliumDnsRule(dns: readonly Json[] | undefined): Json {
	return {
		toEndpoints: [
			{
				matchLabels: {
					'k8s:io.kubernetes.pod.namespace': CLUSTER_DNS_NAMESPACE,
					...Object.fromEntries(
						Object.entries(CLUSTER_DNS_POD_LABELS).map(([key, value]) => [`k8s:${key}`, value]),
					),
				},
			},
		],
		toPorts: [
			{
				ports: [{ port: '53', protocol: 'ANY' }],
				rules: { dns: dns === undefined ? [{ matchPattern: '*' }] : [...dns] },
			},
		],
	}
}

/** The resolver search suffixes a guest tries a name under (`ndots: 5`), in order. */
export function dnsSearchSuffixes(
	dnsNames: NonNullable<ResolvedCiliumNarrowing['dnsNames']>,
): string[] {
	return [
		`${dnsNames.namespace}.svc.${dnsNames.clusterDomain}`,
		`svc.${dnsNames.clusterDomain}`,
		dnsNames.clusterDomain,
		...dnsNames.searchSuffixes,
	]
}

/** The exact names a narrowed translation lets resolve: each host bare and under every suffix. */
export function allowedDnsNames(
	hosts: readonly string[],
	dnsNames: NonNullable<ResolvedCiliumNarrowing['dnsNames']>,
): string[] {
	const suffixes = dnsSearchSuffixes(dnsNames)
	const names: string[] = []
	for (const host of hosts) {
		for (const name of [host, ...suffixes.map((suffix) => `${host}.${suffix}`)]) {
			if (!names.includes(name)) names.push(name)
		}
	}
	return names
}

export function tcpPorts(ports: readonly number[]): Json[] {
	return ports.map((port) => ({ port: String(port), protocol: 'TCP' }))
}

/** One host's ports under narrowing; `undefined` when it is reachable on every port. */
export function hostAllowance(host: string, narrowing: ResolvedCiliumNarrowing): HostAllowance {
	const configured = narrowing.hostPorts[host] ?? narrowing.ports
	if (!narrowing.tlsServerNames) {
		return { ...(configured === undefined ? {} : { ports: configured }), serverNamePorts: [] }
	}
	// A serverNames rule needs a port: an unported host is limited to its TLS ports.
	const ports = configured ?? narrowing.tlsPorts
	return { ports, serverNamePorts: ports.filter((port) => narrowing.tlsPorts.includes(port)) }
}

/** One allowlist entry's rule under per-host narrowing: its FQDN selectors on its ports. */
export function perHostRule(fqdns: readonly Json[], host: string, allowance: HostAllowance): Json {
	const rule: Json = { toFQDNs: [...fqdns] }
	if (allowance.ports === undefined) return rule
	const plain = allowance.ports.filter((port) => !allowance.serverNamePorts.includes(port))
	const toPorts: Json[] = []
	if (plain.length > 0) toPorts.push({ ports: tcpPorts(plain) })
	if (allowance.serverNamePorts.length > 0) {
		toPorts.push({ ports: tcpPorts(allowance.serverNamePorts), serverNames: [host] })
	}
	return { ...rule, toPorts }
}

/** Whether narrowing asks for one rule per host (ports or server names) rather than one list. */
export function narrowsPerHost(narrowing: ResolvedCiliumNarrowing | undefined): boolean {
	return (
		narrowing !== undefined &&
		(narrowing.ports !== undefined ||
			Object.keys(narrowing.hostPorts).length > 0 ||
			narrowing.tlsServerNames)
	)
}

/**
 * A config-level `.domain` entry with `tlsServerNames`: the entry reaches the object as the literal
 * `matchName` (this translation expands nothing), so it admits nothing either way and `serverNames`
 * would be a second, independent denial; refused rather than written.
 */
function refuseConfigDomainWithServerNames(
	hosts: readonly string[],
	narrowing: ResolvedCiliumNarrowing | undefined,
): void {
	if (!narrowing?.tlsServerNames) return
	const domain = hosts.find((host) => host.startsWith('.'))
	if (domain === undefined) return
	throw new KubernetesNetworkPolicyHostError({
		host: domain,
		problem: 'domain-with-tls-server-names',
		field: 'config.egress.ciliumNarrowing',
		detail: `the allowlist entry ${JSON.stringify(domain)} with tlsServerNames is refused: the config-level translation writes it as the literal matchName ${JSON.stringify(domain)}, which no DNS answer carries, so it admits nothing with or without the option, and serverNames on top of it would be a second, independent denial`,
	})
}

function ciliumTranslation(
	selector: Record<string, string>,
	hosts: readonly string[],
	narrowing: ResolvedCiliumNarrowing | undefined,
): { spec: Json; allowance: EgressAllowance } {
	refuseConfigDomainWithServerNames(hosts, narrowing)
	const perHost = narrowsPerHost(narrowing)
	const dnsNames =
		narrowing?.dnsNames === undefined ? undefined : allowedDnsNames(hosts, narrowing.dnsNames)
	const allowances = new Map<string, HostAllowance>()
	for (const host of hosts) {
		allowances.set(
			host,
			perHost && narrowing !== undefined ? hostAllowance(host, narrowing) : { serverNamePorts: [] },
		)
	}
	const hostRules: Json[] = perHost
		? hosts.map((host) =>
				perHostRule([{ matchName: host }], host, allowances.get(host) ?? { serverNamePorts: [] }),
			)
		: hosts.length > 0
			? [{ toFQDNs: hosts.map((matchName) => ({ matchName })) }]
			: []
	return {
		spec: {
			endpointSelector: { matchLabels: selector },
			egress: [ciliumDnsRule(dnsNames?.map((matchName) => ({ matchName }))), ...hostRules],
		},
		allowance: {
			kind: 'hostnames',
			hosts: allowances,
			...(dnsNames === undefined ? {} : { dnsNames }),
		},
	}
}

/**
 * The translation of `egress` for pods of `templateName`. `hosts` is the allowlist of a `static`
 * policy, or what a `resolver` answered for this verification.
 */
export function translateEgressPolicy(
	egress: ResolvedEgressConfig,
	templateName: string,
	hosts: readonly string[] = [],
): TranslatedEgressPolicy {
	const selector = policySelectorLabels(templateName, egress)
	const name = egress.networkPolicyName
	const core = (egressRules: Json[] | undefined, allowance: EgressAllowance) => ({
		kind: 'NetworkPolicy' as const,
		apiVersion: NETWORK_POLICY_API_VERSION,
		name,
		spec: corePolicy(selector, egressRules),
		allowance,
	})
	const policy = egress.policy
	switch (policy.kind) {
		case 'deny-all':
			return core([clusterDnsRule()], { kind: 'cluster-dns' })
		case 'allow-all':
			return core([clusterDnsRule(), {}], { kind: 'everything' })
		case 'no-network':
			return core(undefined, { kind: 'nothing' })
		case 'public-internet': {
			const { v4, v6 } = exceptLists(policy.exceptCidrs ?? [])
			return core(
				[
					resolverPodsRule(),
					{
						to: [
							{ ipBlock: { cidr: '0.0.0.0/0', except: v4 } },
							{ ipBlock: { cidr: '::/0', except: v6 } },
						],
					},
				],
				{
					kind: 'public-internet',
					except: [...v4, ...v6].flatMap((cidr) => parseCidr(cidr) ?? []),
				},
			)
		}
		case 'static':
		case 'resolver': {
			const { spec, allowance } = ciliumTranslation(selector, hosts, egress.narrowing)
			return {
				kind: 'CiliumNetworkPolicy',
				apiVersion: CILIUM_POLICY_API_VERSION,
				name,
				spec,
				allowance,
			}
		}
	}
}

/** The whole object an operator applies (what `k8s/` ships and a test can `kubectl apply`). */
export function translatedPolicyObject(
	translated: TranslatedEgressPolicy,
	namespace: string,
): Json {
	return {
		apiVersion: translated.apiVersion,
		kind: translated.kind,
		metadata: { name: translated.name, namespace },
		spec: translated.spec,
	}
}
