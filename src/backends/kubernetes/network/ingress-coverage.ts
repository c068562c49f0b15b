/**
 * Is the agent port closed? Pure: given every policy listed in the namespace and the pod's real
 * labels, the port is covered only when at least one ingress-enforcing policy selects the pod and
 * no selecting policy admits a wide-open peer on it. Policies union, so one open rule opens the
 * port however many closed ones sit beside it. A wide-open peer is one that is not a bounded set:
 * no `from` at all, an address block of prefix 0, every pod of every namespace, every pod of the
 * sandbox namespace (the other sandboxes), or any Cilium entity.
 */
import { parseCidr } from './cidr.js'
import { readSelector, selectsEverything } from './label-selector.js'
import type {
	ExaminedIngressPolicy,
	IngressPolicyRefusal,
	IngressPolicyVerdict,
	UnreadPolicySource,
} from './network-errors.js'
import {
	isProblem,
	type ModelledPolicy,
	type ReadPolicy,
	readCiliumToPorts,
	readCorePorts,
	readStringList,
} from './policy-model.js'
import { examinePolicies } from './policy-selection.js'

export type IngressDecision =
	| { readonly pass: true; readonly examined: readonly ExaminedIngressPolicy[] }
	| {
			readonly pass: false
			readonly refusal: IngressPolicyRefusal
			readonly examined: readonly ExaminedIngressPolicy[]
	  }

type RuleOutcome = 'closed' | { open: string } | { unreadable: string }

function covers(
	port: { protocol: string; from?: number; to?: number },
	agentPort: number,
): boolean {
	if (port.protocol !== 'TCP' && port.protocol !== 'ANY') return false
	if (port.from === undefined || port.to === undefined) return true
	return agentPort >= port.from && agentPort <= port.to
}

const CORE_INGRESS_FIELDS = Object.keys({ from: true, ports: true })

function coreRule(rule: Record<string, unknown>, agentPort: number, field: string): RuleOutcome {
	for (const key of Object.keys(rule)) {
		if (!CORE_INGRESS_FIELDS.includes(key)) {
			return { unreadable: `${field}.${key} is not a rule field` }
		}
	}
	const ports = readCorePorts(rule.ports, `${field}.ports`)
	if (isProblem(ports)) return { unreadable: ports.problem }
	if (ports !== 'any' && !ports.some((port) => covers(port, agentPort))) return 'closed'
	if (rule.from === undefined) return { open: `${field} admits every source` }
	if (!Array.isArray(rule.from)) return { unreadable: `${field}.from is not a list of peers` }
	if (rule.from.length === 0) return { open: `${field} admits every source` }
	for (const [index, peer] of rule.from.entries()) {
		const at = `${field}.from[${index}]`
		if (typeof peer !== 'object' || peer === null || Array.isArray(peer)) {
			return { unreadable: `${at} is not a peer` }
		}
		const record = peer as Record<string, unknown>
		for (const key of Object.keys(record)) {
			if (key !== 'ipBlock' && key !== 'namespaceSelector' && key !== 'podSelector') {
				return { unreadable: `${at}.${key} is not a peer field` }
			}
		}
		if (record.ipBlock !== undefined) {
			const block = record.ipBlock as Record<string, unknown> | null
			const cidr = typeof block === 'object' && block !== null ? parseCidr(block.cidr) : undefined
			if (!cidr) return { unreadable: `${at}.ipBlock.cidr is not a CIDR` }
			if (cidr.prefix === 0) return { open: `${at} admits every address` }
			continue
		}
		const pods =
			record.podSelector === undefined
				? undefined
				: readSelector(record.podSelector, `${at}.podSelector`)
		const namespaces =
			record.namespaceSelector === undefined
				? undefined
				: readSelector(record.namespaceSelector, `${at}.namespaceSelector`)
		if (pods && !pods.ok) return { unreadable: pods.problem }
		if (namespaces && !namespaces.ok) return { unreadable: namespaces.problem }
		const everyPod = pods === undefined || (pods.ok && selectsEverything(pods.selector))
		if (namespaces === undefined) {
			if (everyPod) return { open: `${at} admits every pod of the namespace` }
			continue
		}
		if (namespaces.ok && selectsEverything(namespaces.selector) && everyPod) {
			return { open: `${at} admits every pod of every namespace` }
		}
	}
	return 'closed'
}

const CILIUM_INGRESS_FIELDS = [
	'fromEndpoints',
	'fromCIDR',
	'fromCIDRSet',
	'fromEntities',
	'toPorts',
]

function ciliumRule(rule: Record<string, unknown>, agentPort: number, field: string): RuleOutcome {
	for (const key of Object.keys(rule)) {
		if (!CILIUM_INGRESS_FIELDS.includes(key)) {
			return { unreadable: `${field}.${key} is not a field the check reads` }
		}
	}
	const toPorts = readCiliumToPorts(rule.toPorts, `${field}.toPorts`)
	if (isProblem(toPorts)) return { unreadable: toPorts.problem }
	const applies =
		toPorts === 'any' ||
		toPorts.some(
			(entry) => entry.ports === 'any' || entry.ports.some((port) => covers(port, agentPort)),
		)
	if (rule.fromCIDR !== undefined) {
		const list = readStringList(rule.fromCIDR, `${field}.fromCIDR`)
		if (typeof list === 'string') return { unreadable: list }
		for (const entry of list) {
			const cidr = parseCidr(entry)
			if (!cidr) return { unreadable: `${field}.fromCIDR holds ${JSON.stringify(entry)}` }
			if (applies && cidr.prefix === 0) return { open: `${field}.fromCIDR admits every address` }
		}
	}
	if (rule.fromCIDRSet !== undefined) {
		if (!Array.isArray(rule.fromCIDRSet))
			return { unreadable: `${field}.fromCIDRSet is not a list` }
		for (const entry of rule.fromCIDRSet) {
			const cidr =
				typeof entry === 'object' && entry !== null
					? parseCidr((entry as Record<string, unknown>).cidr)
					: undefined
			if (!cidr) return { unreadable: `${field}.fromCIDRSet holds an entry that is not a CIDR` }
			if (applies && cidr.prefix === 0) return { open: `${field}.fromCIDRSet admits every address` }
		}
	}
	if (rule.fromEntities !== undefined) {
		const list = readStringList(rule.fromEntities, `${field}.fromEntities`)
		if (typeof list === 'string') return { unreadable: list }
		if (applies && list.length > 0)
			return { open: `${field}.fromEntities admits ${list.join(', ')}` }
	}
	if (rule.fromEndpoints !== undefined) {
		if (!Array.isArray(rule.fromEndpoints)) {
			return { unreadable: `${field}.fromEndpoints is not a list` }
		}
		for (const [index, entry] of rule.fromEndpoints.entries()) {
			const selector = readSelector(entry, `${field}.fromEndpoints[${index}]`, true)
			if (!selector.ok) return { unreadable: selector.problem }
			if (applies && selectsEverything(selector.selector)) {
				return { open: `${field}.fromEndpoints[${index}] admits every endpoint` }
			}
		}
	}
	const l3 = CILIUM_INGRESS_FIELDS.some((key) => key !== 'toPorts' && rule[key] !== undefined)
	if (applies && !l3) return { open: `${field} admits every source` }
	return 'closed'
}

function policyVerdict(
	policy: ModelledPolicy,
	agentPort: number,
): { verdict: IngressPolicyVerdict; detail?: string } {
	if (!policy.isolatesIngress && policy.ingress.length === 0) {
		return policy.ingressDefaultDenyOff
			? { verdict: 'does-not-isolate' }
			: { verdict: 'no-ingress-effect' }
	}
	for (const [index, rule] of policy.ingress.entries()) {
		const field = `spec.ingress[${index}]`
		const outcome =
			policy.kind === 'NetworkPolicy'
				? coreRule(rule, agentPort, field)
				: ciliumRule(rule, agentPort, field)
		if (outcome === 'closed') continue
		if ('open' in outcome) return { verdict: 'opens-agent-port', detail: outcome.open }
		return { verdict: 'not-evaluable', detail: outcome.unreadable }
	}
	// Rules that allow without isolating cannot count as coverage.
	if (!policy.isolatesIngress) return { verdict: 'does-not-isolate' }
	return { verdict: 'closes-agent-port' }
}

/** The decision; see the module comment. */
export function decideIngressCoverage(input: {
	readonly policies: readonly ReadPolicy[]
	readonly podLabels: Readonly<Record<string, string>>
	readonly namespace: string
	readonly agentPort: number
	readonly unread: readonly UnreadPolicySource[]
}): IngressDecision {
	const examined: ExaminedIngressPolicy[] = examinePolicies(
		input.policies,
		input.podLabels,
		input.namespace,
		(policy) => policyVerdict(policy, input.agentPort),
	)
	const has = (verdict: IngressPolicyVerdict) => examined.some((entry) => entry.verdict === verdict)
	if (has('opens-agent-port')) return { pass: false, refusal: 'agent-port-open', examined }
	if (input.unread.length > 0 || has('not-evaluable')) {
		return { pass: false, refusal: 'not-evaluable', examined }
	}
	if (!has('closes-agent-port')) return { pass: false, refusal: 'no-ingress-policy', examined }
	return { pass: true, examined }
}
