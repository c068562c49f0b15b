/**
 * The grammar of a `setNetworkPolicy` allowlist on this tier, pure: each entry is a hostname
 * (`api.example.com`) or a domain (`.example.com`, the domain and every subdomain); letter case is
 * canonicalised, duplicates dropped. A URL, a port suffix, an explicit glob, an IP address and a
 * whole public suffix (`.com`, `.co.uk`) are each refused by name, before anything is sent.
 */
import { describeReceived } from '../../../contract/argument-validators.js'
import {
	KubernetesNetworkPolicyHostError,
	type KubernetesNetworkPolicyHostProblem,
} from './per-sandbox-errors.js'

const LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/
const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/

/**
 * Multi-label public suffixes refused as a `.domain` entry beside every single-label one. Not the
 * whole public suffix list: the common registries whose second level is itself public.
 */
const MULTI_LABEL_PUBLIC_SUFFIXES: ReadonlySet<string> = new Set([
	'co.uk',
	'org.uk',
	'ac.uk',
	'gov.uk',
	'com.au',
	'net.au',
	'org.au',
	'co.jp',
	'ne.jp',
	'or.jp',
	'co.nz',
	'com.br',
	'com.cn',
	'co.in',
	'co.kr',
	'co.za',
	'com.mx',
	'com.tr',
])

function problemOf(
	entry: string,
): { problem: KubernetesNetworkPolicyHostProblem; detail: string } | undefined {
	if (/^[a-z][a-z0-9+.-]*:\/\//.test(entry) || entry.includes('/')) {
		return { problem: 'url', detail: 'is a URL; list the hostname alone' }
	}
	if (entry.includes('*') || entry.includes('?')) {
		return {
			problem: 'glob',
			detail: "is a glob; list the host, or '.domain' for the domain and its subdomains",
		}
	}
	if (entry.includes(':') || entry.startsWith('[')) {
		return /^[0-9a-f:.[\]]+$/.test(entry) && entry.split(':').length > 2
			? { problem: 'ip-address', detail: 'is an IP address; list hostnames' }
			: { problem: 'port', detail: 'has a port suffix; ports are set by perSandbox.narrowing' }
	}
	const name = entry.startsWith('.') ? entry.slice(1) : entry
	if (IPV4.test(name)) return { problem: 'ip-address', detail: 'is an IP address; list hostnames' }
	const labels = name.split('.')
	if (name.length > 253 || !labels.every((label) => LABEL.test(label))) {
		return { problem: 'not-a-hostname', detail: "must be a hostname or '.domain'" }
	}
	if (entry.startsWith('.') && (labels.length < 2 || MULTI_LABEL_PUBLIC_SUFFIXES.has(name))) {
		return {
			problem: 'public-suffix',
			detail: 'is a whole public suffix, which would admit every domain under it',
		}
	}
	return undefined
}

/** The canonical allowlist (lower-case, first occurrence kept); throws on the first bad entry. */
export function canonicalAllowedHosts(hosts: readonly unknown[]): string[] {
	const canonical: string[] = []
	hosts.forEach((host, index) => {
		const field = `allowedHosts[${index}]`
		if (typeof host !== 'string') {
			throw new KubernetesNetworkPolicyHostError({
				host: describeReceived(host),
				index,
				problem: 'not-a-string',
				field,
				detail: `must be a hostname string, got ${describeReceived(host)}`,
			})
		}
		const entry = host.toLowerCase()
		const found = problemOf(entry)
		if (found) {
			throw new KubernetesNetworkPolicyHostError({
				host,
				index,
				problem: found.problem,
				field,
				detail: `${JSON.stringify(host.slice(0, 300))} ${found.detail}`,
			})
		}
		if (!canonical.includes(entry)) canonical.push(entry)
	})
	return canonical
}
