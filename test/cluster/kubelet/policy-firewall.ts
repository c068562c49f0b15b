/**
 * Core `NetworkPolicy` as the process kubelet enforces it: from every policy selecting a pod, the
 * nftables script for that pod's own network namespace. Pure. The semantics are the API's: a pod
 * selected by a policy of a direction is isolated in it (default drop), and is allowed exactly the
 * union of the rules of every policy of that direction selecting it; replies to an allowed
 * connection (conntrack established/related) and loopback always pass. Peers are ipBlocks (with
 * `except`), and pods by `podSelector` / `namespaceSelector`, resolved to the addresses the kubelet
 * knows. Something the renderer cannot read allows nothing (it fails closed). IPv4 only: pods here
 * have no IPv6 address. Cilium objects are not enforced (they are verified, not enforced).
 */

import {
	readSelector,
	selectorMatches,
} from '../../../src/backends/kubernetes/network/label-selector.js'

export type Labels = Readonly<Record<string, string>>

export interface FirewallPod {
	readonly namespace: string
	readonly labels: Labels
	readonly address?: string
}

export interface FirewallInput {
	readonly pod: FirewallPod
	/** Every NetworkPolicy of the cluster, as listed. */
	readonly policies: readonly unknown[]
	/** Namespace name → its labels. */
	readonly namespaces: ReadonlyMap<string, Labels>
	/** Every pod with an address, the peers pod selectors resolve to. */
	readonly pods: readonly FirewallPod[]
}

export const FIREWALL_TABLE = 'namzu_policy'

type Json = Record<string, unknown>

function isObject(value: unknown): value is Json {
	return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** The package's own selector engine; a selector it cannot read selects nothing (fail closed). */
function selects(selector: unknown, labels: Labels): boolean {
	const read = readSelector(selector, 'selector')
	return read.ok && selectorMatches(read.selector, labels)
}

const IPV4_CIDR = /^\d{1,3}(\.\d{1,3}){3}\/\d{1,2}$/

/** nft match expressions for one peer, in direction `dir` (`saddr` for ingress, `daddr` egress). */
function peerMatches(
	peer: unknown,
	policyNamespace: string,
	input: FirewallInput,
	dir: string,
): string[] {
	if (!isObject(peer)) return []
	if (peer.ipBlock !== undefined) {
		const block = peer.ipBlock
		if (!isObject(block) || typeof block.cidr !== 'string') return []
		if (block.cidr === '::/0' || block.cidr.includes(':')) return []
		if (!IPV4_CIDR.test(block.cidr)) return []
		const except = Array.isArray(block.except)
			? block.except.filter(
					(entry): entry is string => typeof entry === 'string' && IPV4_CIDR.test(entry),
				)
			: []
		return [
			`ip ${dir} ${block.cidr}${except.length > 0 ? ` ip ${dir} != { ${except.join(', ')} }` : ''}`,
		]
	}
	const addresses = input.pods
		.filter((candidate) => candidate.address !== undefined)
		.filter((candidate) => {
			if (peer.namespaceSelector !== undefined) {
				const labels = input.namespaces.get(candidate.namespace) ?? {}
				if (!selects(peer.namespaceSelector, labels)) return false
			} else if (candidate.namespace !== policyNamespace) return false
			return peer.podSelector === undefined || selects(peer.podSelector, candidate.labels)
		})
		.map((candidate) => candidate.address as string)
	return addresses.length === 0 ? [] : [`ip ${dir} { ${addresses.join(', ')} }`]
}

function portMatches(ports: unknown): string[] | undefined {
	if (ports === undefined || (Array.isArray(ports) && ports.length === 0)) return ['']
	if (!Array.isArray(ports)) return undefined
	const out: string[] = []
	for (const port of ports) {
		if (!isObject(port)) return undefined
		const protocol = String(port.protocol ?? 'TCP').toLowerCase()
		if (protocol !== 'tcp' && protocol !== 'udp' && protocol !== 'sctp') return undefined
		if (port.port === undefined) {
			out.push(` meta l4proto ${protocol}`)
			continue
		}
		if (typeof port.port !== 'number') continue // a named port: nothing this renderer can match
		const end = typeof port.endPort === 'number' ? `-${port.endPort}` : ''
		out.push(` ${protocol} dport ${port.port}${end}`)
	}
	return out
}

function ruleLines(
	rule: unknown,
	peersKey: 'to' | 'from',
	policyNamespace: string,
	input: FirewallInput,
	dir: string,
): string[] {
	if (!isObject(rule)) return []
	const ports = portMatches(rule.ports)
	if (ports === undefined) return []
	const peers = rule[peersKey]
	const peerList =
		peers === undefined || (Array.isArray(peers) && peers.length === 0)
			? ['']
			: Array.isArray(peers)
				? peers.flatMap((peer) => peerMatches(peer, policyNamespace, input, dir))
				: []
	const lines: string[] = []
	for (const peer of peerList) for (const port of ports) lines.push(`${peer}${port} accept`.trim())
	return lines
}

interface Direction {
	readonly isolated: boolean
	readonly lines: readonly string[]
}

function direction(input: FirewallInput, which: 'Ingress' | 'Egress'): Direction {
	let isolated = false
	const lines: string[] = []
	for (const policy of input.policies) {
		if (!isObject(policy) || !isObject(policy.spec) || !isObject(policy.metadata)) continue
		if (policy.metadata.namespace !== input.pod.namespace) continue
		const spec = policy.spec
		if (!selects(spec.podSelector ?? {}, input.pod.labels)) continue
		const egressRules = Array.isArray(spec.egress) ? spec.egress : []
		const types = Array.isArray(spec.policyTypes)
			? spec.policyTypes
			: egressRules.length > 0
				? ['Ingress', 'Egress']
				: ['Ingress']
		if (!types.includes(which)) continue
		isolated = true
		const rules = which === 'Egress' ? spec.egress : spec.ingress
		if (!Array.isArray(rules)) continue
		for (const rule of rules) {
			lines.push(
				...ruleLines(
					rule,
					which === 'Egress' ? 'to' : 'from',
					input.pod.namespace,
					input,
					which === 'Egress' ? 'daddr' : 'saddr',
				),
			)
		}
	}
	return { isolated, lines }
}

/**
 * The script for one pod: it replaces the table whole (create, delete, recreate) in one
 * transaction. A pod no policy selects still gets the table, both chains accepting: its rules
 * match on conntrack state, so connection tracking runs in the pod's namespace from its first
 * packet. Without it, a connection opened while nothing selected the pod is untracked, and once a
 * policy isolates the pod its next packet is picked up mid-stream as `new` — the reply to an
 * allowed connection would be dropped, which no real CNI does.
 */
export function renderPodFirewall(input: FirewallInput): string {
	const ingress = direction(input, 'Ingress')
	const egress = direction(input, 'Egress')
	const reset = [`table inet ${FIREWALL_TABLE} {}`, `delete table inet ${FIREWALL_TABLE}`]
	const chain = (name: string, hook: string, iface: string, rules: Direction) => [
		`\tchain ${name} {`,
		`\t\ttype filter hook ${hook} priority 0; policy ${rules.isolated ? 'drop' : 'accept'};`,
		'\t\tct state established,related accept',
		`\t\t${iface} lo accept`,
		...rules.lines.map((line) => `\t\t${line}`),
		'\t}',
	]
	return `${[
		...reset,
		`table inet ${FIREWALL_TABLE} {`,
		...chain('ingress', 'input', 'iif', ingress),
		...chain('egress', 'output', 'oif', egress),
		'}',
	].join('\n')}\n`
}
