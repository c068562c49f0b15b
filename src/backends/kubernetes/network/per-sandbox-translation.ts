/**
 * A canonical `setNetworkPolicy` allowlist → the `spec` of that sandbox's CiliumNetworkPolicy, pure:
 * the kube-dns rule plus the hosts' `toFQDNs`. Unlike the config-level translation this one expands
 * the domain form — `.example.com` becomes `matchName: example.com` plus `matchPattern:
 * '*.example.com'` — and so, under `dnsNames` narrowing, a domain also resolves under every search
 * suffix as a pattern, since a guest tries those suffixes first and a refused lookup can fail the
 * whole resolution. An exact host never gets a pattern.
 */
import type { ResolvedCiliumNarrowing } from './cilium-narrowing-config.js'
import {
	allowedDnsNames,
	ciliumDnsRule,
	dnsSearchSuffixes,
	hostAllowance,
	narrowsPerHost,
	perHostRule,
} from './egress-translation.js'
import { KubernetesNetworkPolicyHostError } from './per-sandbox-errors.js'

type Json = Record<string, unknown>

/** The FQDN selectors one entry becomes. */
export function fqdnSelectors(entry: string): Json[] {
	if (!entry.startsWith('.')) return [{ matchName: entry }]
	const domain = entry.slice(1)
	return [{ matchName: domain }, { matchPattern: `*.${domain}` }]
}

/** The DNS selectors one entry may look up under `dnsNames` narrowing. */
export function dnsSelectors(
	entry: string,
	dnsNames: NonNullable<ResolvedCiliumNarrowing['dnsNames']>,
): Json[] {
	const domain = entry.startsWith('.') ? entry.slice(1) : undefined
	const names = allowedDnsNames([domain ?? entry], dnsNames).map((matchName) => ({ matchName }))
	if (domain === undefined) return names
	const patterns = [`*.${domain}`, ...dnsSearchSuffixes(dnsNames).map((s) => `*.${domain}.${s}`)]
	return [...names, ...patterns.map((matchPattern) => ({ matchPattern }))]
}

/**
 * A `.domain` entry with `tlsServerNames`: a server name is one exact SNI value, so it would deny
 * every subdomain the same rule's `toFQDNs` admits while the object verifies; refused instead.
 */
export function refuseDomainWithServerNames(
	hosts: readonly string[],
	narrowing: ResolvedCiliumNarrowing | undefined,
): void {
	if (!narrowing?.tlsServerNames) return
	const index = hosts.findIndex((host) => host.startsWith('.'))
	const domain = hosts[index]
	if (domain === undefined) return
	throw new KubernetesNetworkPolicyHostError({
		host: domain,
		index,
		problem: 'domain-with-tls-server-names',
		field: 'config.egress.perSandbox.narrowing',
		detail: `the allowlist entry ${JSON.stringify(domain)} with tlsServerNames is refused: it expands to matchName ${JSON.stringify(domain.slice(1))} plus matchPattern ${JSON.stringify(`*${domain}`)}, while a TLS server name is one exact SNI value, so serverNames would deny every subdomain the pattern admits; list the exact hosts, or leave tlsServerNames off for a domain list. A '.domain' entry means the domain and every subdomain of it.`,
	})
}

/** The `spec` selecting `selector`; `hosts` is canonical (per-sandbox-hosts.ts) and non-empty. */
export function translatePerSandboxEgress(
	hosts: readonly string[],
	narrowing: ResolvedCiliumNarrowing | undefined,
	selector: Readonly<Record<string, string>>,
): Json {
	refuseDomainWithServerNames(hosts, narrowing)
	const dnsNames = narrowing?.dnsNames
	const dns =
		dnsNames === undefined ? undefined : dedupe(hosts.flatMap((h) => dnsSelectors(h, dnsNames)))
	const hostRules =
		narrowing !== undefined && narrowsPerHost(narrowing)
			? hosts.map((host) => perHostRule(fqdnSelectors(host), host, hostAllowance(host, narrowing)))
			: [{ toFQDNs: hosts.flatMap(fqdnSelectors) }]
	return {
		endpointSelector: { matchLabels: { ...selector } },
		egress: [ciliumDnsRule(dns), ...hostRules],
	}
}

function dedupe(selectors: readonly Json[]): Json[] {
	const seen = new Set<string>()
	return selectors.filter((selector) => {
		const key = JSON.stringify(selector)
		if (seen.has(key)) return false
		seen.add(key)
		return true
	})
}
