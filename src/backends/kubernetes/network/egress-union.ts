/**
 * The union check's decision, pure: given every policy listed in the namespace, the pod's real
 * labels and what the translation allows, is the union of the policies selecting the pod inside
 * the translation, and does at least one of them bound it? Policies union — traffic leaves if any
 * selecting policy allows it — so one rule outside the translation widens the pod's egress however
 * tight the named object is. Subset is decided conservatively: a rule passes only when it can be
 * shown inside; anything not placed inside widens, anything not read is not evaluable.
 */
import { type Cidr, cidrContains, cidrsOverlap, parseCidr } from './cidr.js'
import type { EgressAllowance, HostAllowance } from './egress-translation.js'
import {
	CLUSTER_DNS_NAMESPACE,
	CLUSTER_DNS_POD_LABELS,
	NAMESPACE_NAME_LABEL,
} from './egress-translation.js'
import { type LabelSelector, readSelector, selectorRequires } from './label-selector.js'
import type {
	EgressPolicyRefusal,
	EgressPolicyVerdict,
	ExaminedEgressPolicy,
	UnreadPolicySource,
} from './network-errors.js'
import {
	type CiliumPortRule,
	isProblem,
	type ModelledPolicy,
	type ReadPolicy,
	readCiliumToPorts,
	readCorePorts,
	readStringList,
} from './policy-model.js'
import { CILIUM_NAMESPACE_LABEL, examinePolicies } from './policy-selection.js'

export type UnionDecision =
	| { readonly pass: true; readonly examined: readonly ExaminedEgressPolicy[] }
	| {
			readonly pass: false
			readonly refusal: EgressPolicyRefusal
			readonly examined: readonly ExaminedEgressPolicy[]
	  }

type RuleVerdict =
	| { readonly kind: 'within' }
	| { readonly kind: 'widens'; readonly detail: string }
	| { readonly kind: 'unreadable'; readonly detail: string }

const WITHIN: RuleVerdict = { kind: 'within' }
const widens = (detail: string): RuleVerdict => ({ kind: 'widens', detail })
const unreadable = (detail: string): RuleVerdict => ({ kind: 'unreadable', detail })

function onlyPort53(
	ports: readonly { protocol: string; from?: number; to?: number }[] | 'any',
	protocols: readonly string[],
): boolean {
	return (
		ports !== 'any' &&
		ports.every((port) => protocols.includes(port.protocol) && port.from === 53 && port.to === 53)
	)
}

/** A core peer confined to the resolver (the namespace; with `pods`, also the resolver's pods). */
function coreDnsPeer(peer: Record<string, unknown>, pods: boolean): boolean | string {
	if (peer.ipBlock !== undefined) return false
	if (peer.namespaceSelector === undefined) return false
	const namespaces = readSelector(peer.namespaceSelector, 'namespaceSelector')
	if (!namespaces.ok) return namespaces.problem
	if (!selectorRequires(namespaces.selector, NAMESPACE_NAME_LABEL, CLUSTER_DNS_NAMESPACE)) {
		return false
	}
	if (peer.podSelector !== undefined) {
		const selected = readSelector(peer.podSelector, 'podSelector')
		if (!selected.ok) return selected.problem
		if (!pods) return true
		return requiresAll(selected.selector, CLUSTER_DNS_POD_LABELS)
	}
	return !pods
}

function requiresAll(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
	return Object.entries(labels).every(([key, value]) => selectorRequires(selector, key, value))
}

/** Whether an ipBlock (or CIDR set) keeps out every address the translation excepts. */
function blockWithin(cidr: Cidr, except: readonly Cidr[], excluded: readonly Cidr[]): boolean {
	return excluded.every(
		(denied) => !cidrsOverlap(cidr, denied) || except.some((own) => cidrContains(own, denied)),
	)
}

function readExcept(value: unknown, field: string): Cidr[] | string {
	if (value === undefined) return []
	const list = readStringList(value, field)
	if (typeof list === 'string') return list
	const out: Cidr[] = []
	for (const entry of list) {
		const cidr = parseCidr(entry)
		if (!cidr) return `${field} holds ${JSON.stringify(entry)}, not a CIDR`
		out.push(cidr)
	}
	return out
}

function corePeerVerdict(
	peer: unknown,
	allowance: EgressAllowance,
	dnsPorts: boolean,
	field: string,
): RuleVerdict {
	if (typeof peer !== 'object' || peer === null || Array.isArray(peer)) {
		return unreadable(`${field} is not a peer`)
	}
	const record = peer as Record<string, unknown>
	for (const key of Object.keys(record)) {
		if (key !== 'ipBlock' && key !== 'namespaceSelector' && key !== 'podSelector') {
			return unreadable(`${field}.${key} is not a peer field`)
		}
	}
	if (record.ipBlock !== undefined) {
		const block = record.ipBlock
		if (typeof block !== 'object' || block === null || Array.isArray(block)) {
			return unreadable(`${field}.ipBlock is not an ipBlock`)
		}
		const { cidr: text, except: exceptValue } = block as Record<string, unknown>
		const cidr = parseCidr(text)
		if (!cidr) return unreadable(`${field}.ipBlock.cidr is not a CIDR`)
		const except = readExcept(exceptValue, `${field}.ipBlock.except`)
		if (typeof except === 'string') return unreadable(except)
		if (allowance.kind === 'public-internet' && blockWithin(cidr, except, allowance.except)) {
			return WITHIN
		}
		return widens(`${field}.ipBlock ${String(text)} reaches addresses the translation does not`)
	}
	const needsPods = allowance.kind === 'public-internet'
	const dns = coreDnsPeer(record, needsPods)
	if (typeof dns === 'string') return unreadable(`${field}: ${dns}`)
	if (dns && dnsPorts) {
		if (allowance.kind === 'hostnames' && allowance.dnsNames !== undefined) {
			return widens(`${field} resolves any name (a NetworkPolicy has no DNS restriction)`)
		}
		if (allowance.kind !== 'nothing') return WITHIN
	}
	return widens(`${field} reaches pods the translation does not`)
}

function coreRuleVerdict(
	rule: Record<string, unknown>,
	allowance: EgressAllowance,
	field: string,
): RuleVerdict {
	for (const key of Object.keys(rule)) {
		if (key !== 'to' && key !== 'ports') return unreadable(`${field}.${key} is not a rule field`)
	}
	const ports = readCorePorts(rule.ports, `${field}.ports`)
	if (isProblem(ports)) return unreadable(ports.problem)
	if (rule.to !== undefined && !Array.isArray(rule.to)) {
		return unreadable(`${field}.to is not a list of peers`)
	}
	if (allowance.kind === 'everything') return WITHIN
	if (allowance.kind === 'nothing') return widens(`${field}: any egress rule widens no-network`)
	const peers = (rule.to ?? []) as unknown[]
	if (peers.length === 0) return widens(`${field} allows every destination`)
	const dnsPorts = onlyPort53(ports, ['UDP', 'TCP'])
	for (const [index, peer] of peers.entries()) {
		const verdict = corePeerVerdict(peer, allowance, dnsPorts, `${field}.to[${index}]`)
		if (verdict.kind !== 'within') return verdict
	}
	return WITHIN
}

function hostOf(name: string): string {
	return name.toLowerCase().replace(/\.$/, '')
}

function portInside(
	port: { protocol: string; from?: number; to?: number },
	allowed: readonly number[],
): boolean {
	if (port.protocol !== 'TCP' || port.from === undefined || port.to === undefined) return false
	for (let value = port.from; value <= port.to; value++) if (!allowed.includes(value)) return false
	return true
}

/** A `toFQDNs` rule's ports against what one allowed host may use. */
function fqdnPortsWithin(
	toPorts: readonly CiliumPortRule[] | 'any',
	host: string,
	allowance: HostAllowance,
): string | undefined {
	if (allowance.ports === undefined) return undefined
	if (toPorts === 'any') return `${host} on every port`
	for (const entry of toPorts) {
		if (entry.ports === 'any') return `${host} on every port`
		for (const port of entry.ports) {
			if (!portInside(port, allowance.ports)) return `${host} on a port outside its list`
			const needsName = allowance.serverNamePorts.some(
				(tls) =>
					port.from !== undefined && port.to !== undefined && tls >= port.from && tls <= port.to,
			)
			if (
				needsName &&
				(entry.serverNames === undefined ||
					entry.serverNames.length === 0 ||
					!entry.serverNames.every((name) => hostOf(name) === hostOf(host)))
			) {
				return `${host} on a TLS port without serverNames [${host}]`
			}
		}
	}
	return undefined
}

function ciliumDnsWithin(
	toPorts: readonly CiliumPortRule[] | 'any',
	allowance: EgressAllowance,
): string | undefined {
	if (toPorts === 'any') return 'every port of the resolver'
	for (const entry of toPorts) {
		if (!onlyPort53(entry.ports, ['UDP', 'TCP', 'ANY'])) return 'a port other than 53'
		if (entry.otherL7) return 'L7 rules the check does not read'
		if (allowance.kind === 'hostnames' && allowance.dnsNames !== undefined) {
			const names = allowance.dnsNames
			if (entry.dns === undefined) return 'any name (no DNS restriction)'
			for (const match of entry.dns) {
				if (match.matchPattern !== undefined) return `the pattern ${match.matchPattern}`
				if (match.matchName === undefined || !names.includes(hostOf(match.matchName))) {
					return `the name ${String(match.matchName)}`
				}
			}
		}
	}
	return undefined
}

const CILIUM_EGRESS_FIELDS = [
	'toEndpoints',
	'toFQDNs',
	'toPorts',
	'toCIDR',
	'toCIDRSet',
	'toEntities',
]

function ciliumRuleVerdict(
	rule: Record<string, unknown>,
	allowance: EgressAllowance,
	field: string,
): RuleVerdict {
	for (const key of Object.keys(rule)) {
		if (!CILIUM_EGRESS_FIELDS.includes(key)) {
			return unreadable(`${field}.${key} is not a field the check reads`)
		}
	}
	const toPorts = readCiliumToPorts(rule.toPorts, `${field}.toPorts`)
	if (isProblem(toPorts)) return unreadable(toPorts.problem)
	const l3 = CILIUM_EGRESS_FIELDS.filter((key) => key !== 'toPorts' && rule[key] !== undefined)
	for (const key of ['toCIDR', 'toEntities'] as const) {
		if (rule[key] !== undefined) {
			const list = readStringList(rule[key], `${field}.${key}`)
			if (typeof list === 'string') return unreadable(list)
		}
	}
	for (const key of ['toEndpoints', 'toFQDNs', 'toCIDRSet'] as const) {
		if (rule[key] !== undefined && !Array.isArray(rule[key])) {
			return unreadable(`${field}.${key} is not a list`)
		}
	}
	if (allowance.kind === 'everything') return WITHIN
	if (allowance.kind === 'nothing') return widens(`${field}: any egress rule widens no-network`)
	if (l3.length === 0) return widens(`${field} allows every destination`)
	if (rule.toEntities !== undefined) return widens(`${field}.toEntities reaches whole entities`)
	for (const key of ['toCIDR', 'toCIDRSet'] as const) {
		const entries = (rule[key] ?? []) as unknown[]
		for (const [index, entry] of entries.entries()) {
			const at = `${field}.${key}[${index}]`
			const record =
				typeof entry === 'string' ? { cidr: entry } : (entry as Record<string, unknown> | null)
			if (record === null || typeof record !== 'object') return unreadable(`${at} is not a CIDR`)
			const cidr = parseCidr(record.cidr)
			if (!cidr) return unreadable(`${at} is not a CIDR`)
			const except = readExcept(record.except, `${at}.except`)
			if (typeof except === 'string') return unreadable(except)
			if (allowance.kind !== 'public-internet' || !blockWithin(cidr, except, allowance.except)) {
				return widens(`${at} reaches addresses the translation does not`)
			}
		}
	}
	for (const [index, entry] of ((rule.toEndpoints ?? []) as unknown[]).entries()) {
		const at = `${field}.toEndpoints[${index}]`
		const selector = readSelector(entry, at, true)
		if (!selector.ok) return unreadable(selector.problem)
		const resolver =
			selectorRequires(selector.selector, CILIUM_NAMESPACE_LABEL, CLUSTER_DNS_NAMESPACE) &&
			(allowance.kind !== 'public-internet' ||
				requiresAll(selector.selector, CLUSTER_DNS_POD_LABELS))
		if (!resolver) return widens(`${at} reaches endpoints the translation does not`)
		const outside = ciliumDnsWithin(toPorts, allowance)
		if (outside !== undefined) return widens(`${at} allows ${outside}`)
	}
	for (const [index, entry] of ((rule.toFQDNs ?? []) as unknown[]).entries()) {
		const at = `${field}.toFQDNs[${index}]`
		if (typeof entry !== 'object' || entry === null) return unreadable(`${at} is not a match`)
		const { matchName, matchPattern } = entry as Record<string, unknown>
		if (matchPattern !== undefined)
			return widens(`${at} matches the pattern ${String(matchPattern)}`)
		if (typeof matchName !== 'string') return unreadable(`${at}.matchName is not a name`)
		if (allowance.kind !== 'hostnames') return widens(`${at} allows ${matchName}`)
		const host = allowance.hosts.get(hostOf(matchName)) ?? allowance.hosts.get(matchName)
		if (host === undefined) return widens(`${at} allows ${matchName}, not on the allowlist`)
		const outside = fqdnPortsWithin(toPorts, matchName, host)
		if (outside !== undefined) return widens(`${at} allows ${outside}`)
	}
	return WITHIN
}

function policyVerdict(
	policy: ModelledPolicy,
	allowance: EgressAllowance,
): { verdict: EgressPolicyVerdict; detail?: string; enforces: boolean } {
	if (!policy.isolatesEgress && policy.egress.length === 0) {
		return { verdict: 'no-egress-effect', enforces: false }
	}
	for (const [index, rule] of policy.egress.entries()) {
		const field = `spec.egress[${index}]`
		const verdict =
			policy.kind === 'NetworkPolicy'
				? coreRuleVerdict(rule, allowance, field)
				: ciliumRuleVerdict(rule, allowance, field)
		if (verdict.kind === 'widens') {
			return { verdict: 'widens-egress', detail: verdict.detail, enforces: policy.isolatesEgress }
		}
		if (verdict.kind === 'unreadable') {
			return { verdict: 'not-evaluable', detail: verdict.detail, enforces: false }
		}
	}
	return { verdict: 'within-translation', enforces: policy.isolatesEgress }
}

/** The decision; see the module comment. `unread` collections make it not evaluable. */
export function decideEgressUnion(input: {
	readonly policies: readonly ReadPolicy[]
	readonly podLabels: Readonly<Record<string, string>>
	readonly namespace: string
	readonly allowance: EgressAllowance
	readonly unread: readonly UnreadPolicySource[]
}): UnionDecision {
	let enforced = false
	const examined: ExaminedEgressPolicy[] = examinePolicies(
		input.policies,
		input.podLabels,
		input.namespace,
		(policy) => {
			const judged = policyVerdict(policy, input.allowance)
			if (judged.enforces) enforced = true
			return judged
		},
	)
	const has = (verdict: EgressPolicyVerdict) => examined.some((entry) => entry.verdict === verdict)
	if (has('widens-egress')) return { pass: false, refusal: 'policy-widens-egress', examined }
	if (input.unread.length > 0 || has('not-evaluable')) {
		return { pass: false, refusal: 'not-evaluable', examined }
	}
	if (!enforced && input.allowance.kind !== 'everything') {
		return { pass: false, refusal: 'no-enforcing-policy', examined }
	}
	return { pass: true, examined }
}
