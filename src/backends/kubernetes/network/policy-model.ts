/**
 * A listed `NetworkPolicy` or `CiliumNetworkPolicy`, read once into what both checks (egress
 * union, ingress coverage) ask of it, defensively: a field that arrives as something the schema
 * does not declare is a `problem`, never read as its empty value — an absent list and a list that
 * is not a list mean opposite things here. Pure.
 */
import { isRecord } from '../../../common/is-record.js'
import { type LabelSelector, readSelector } from './label-selector.js'
import type { KubernetesPolicyKind } from './network-errors.js'

export interface ModelledPolicy {
	readonly kind: KubernetesPolicyKind
	readonly name: string
	readonly selector: LabelSelector
	/** Whether selected pods are isolated for egress (a rule or `policyTypes` says so). */
	readonly isolatesEgress: boolean
	readonly isolatesIngress: boolean
	/** Cilium `enableDefaultDeny.ingress === false`: its rules allow without isolating. */
	readonly ingressDefaultDenyOff: boolean
	readonly egress: readonly Record<string, unknown>[]
	readonly ingress: readonly Record<string, unknown>[]
}

export type ReadPolicy =
	| { readonly ok: true; readonly policy: ModelledPolicy }
	| {
			readonly ok: false
			readonly kind: KubernetesPolicyKind
			readonly name: string
			readonly problem: string
	  }

function rules(value: unknown, field: string): Record<string, unknown>[] | string {
	if (value === undefined || value === null) return []
	if (!Array.isArray(value)) return `${field} is not a list of rules`
	for (const [index, rule] of value.entries()) {
		if (!isRecord(rule)) return `${field}[${index}] is not a rule`
	}
	return value as Record<string, unknown>[]
}

function nameOf(item: unknown): string {
	if (isRecord(item) && isRecord(item.metadata) && typeof item.metadata.name === 'string') {
		return item.metadata.name
	}
	return '(unnamed)'
}

/** A `networking.k8s.io/v1` NetworkPolicy from a LIST. */
export function readNetworkPolicy(item: unknown): ReadPolicy {
	const kind = 'NetworkPolicy'
	const name = nameOf(item)
	const refuse = (problem: string): ReadPolicy => ({ ok: false, kind, name, problem })
	if (!isRecord(item) || !isRecord(item.spec)) return refuse('spec is not an object')
	const spec = item.spec
	const selector = readSelector(spec.podSelector ?? {}, 'spec.podSelector')
	if (!selector.ok) return refuse(selector.problem)
	const egress = rules(spec.egress, 'spec.egress')
	if (typeof egress === 'string') return refuse(egress)
	const ingress = rules(spec.ingress, 'spec.ingress')
	if (typeof ingress === 'string') return refuse(ingress)
	let types: readonly string[]
	if (spec.policyTypes === undefined) {
		// The API server's own default: Ingress always, Egress when there are egress rules.
		types = egress.length > 0 ? ['Ingress', 'Egress'] : ['Ingress']
	} else if (
		Array.isArray(spec.policyTypes) &&
		spec.policyTypes.every((type) => type === 'Ingress' || type === 'Egress')
	) {
		types = spec.policyTypes as string[]
	} else {
		return refuse('spec.policyTypes is not a list of Ingress / Egress')
	}
	return {
		ok: true,
		policy: {
			kind,
			name,
			selector: selector.selector,
			isolatesEgress: types.includes('Egress'),
			isolatesIngress: types.includes('Ingress'),
			ingressDefaultDenyOff: false,
			egress: types.includes('Egress') ? egress : [],
			ingress: types.includes('Ingress') ? ingress : [],
		},
	}
}

/** A `cilium.io/v2` CiliumNetworkPolicy from a LIST (one `spec`; a `specs` list is refused). */
export function readCiliumPolicy(item: unknown): ReadPolicy {
	const kind = 'CiliumNetworkPolicy'
	const name = nameOf(item)
	const refuse = (problem: string): ReadPolicy => ({ ok: false, kind, name, problem })
	if (!isRecord(item)) return refuse('the object is not an object')
	if (item.specs !== undefined) return refuse('specs (a list of rules) is not read')
	if (!isRecord(item.spec)) return refuse('spec is not an object')
	const spec = item.spec
	if (spec.nodeSelector !== undefined)
		return refuse('spec.nodeSelector (a host policy) is not read')
	const selector = readSelector(spec.endpointSelector, 'spec.endpointSelector', true)
	if (!selector.ok) return refuse(selector.problem)
	const egress = rules(spec.egress, 'spec.egress')
	if (typeof egress === 'string') return refuse(egress)
	const egressDeny = rules(spec.egressDeny, 'spec.egressDeny')
	if (typeof egressDeny === 'string') return refuse(egressDeny)
	const ingress = rules(spec.ingress, 'spec.ingress')
	if (typeof ingress === 'string') return refuse(ingress)
	const ingressDeny = rules(spec.ingressDeny, 'spec.ingressDeny')
	if (typeof ingressDeny === 'string') return refuse(ingressDeny)
	const defaults = spec.enableDefaultDeny ?? {}
	if (!isRecord(defaults)) return refuse('spec.enableDefaultDeny is not an object')
	for (const direction of ['egress', 'ingress'] as const) {
		const flag = defaults[direction]
		if (flag !== undefined && typeof flag !== 'boolean') {
			return refuse(`spec.enableDefaultDeny.${direction} is not a boolean`)
		}
	}
	return {
		ok: true,
		policy: {
			kind,
			name,
			selector: selector.selector,
			isolatesEgress: egress.length + egressDeny.length > 0 && defaults.egress !== false,
			isolatesIngress: ingress.length + ingressDeny.length > 0 && defaults.ingress !== false,
			ingressDefaultDenyOff: defaults.ingress === false,
			egress,
			ingress,
		},
	}
}

/** Why a field could not be read. */
export interface Problem {
	readonly problem: string
}

export function isProblem(value: unknown): value is Problem {
	return typeof value === 'object' && value !== null && 'problem' in value
}

/** One port of a core rule: `port` absent means every port. */
export interface CorePort {
	readonly protocol: 'TCP' | 'UDP' | 'SCTP'
	readonly from?: number
	readonly to?: number
}

/** How one engine spells a port: its protocols, its default, and the port field itself. */
interface PortDialect<P extends string> {
	readonly protocols: readonly P[]
	readonly defaultProtocol: P
	/** The port, `'all'` for every port, `undefined` for a named or malformed one. */
	readPort(value: unknown): number | 'all' | undefined
}

/** One port list of either engine: `'any'` when absent or empty. */
function readPortList<P extends string>(
	value: unknown,
	field: string,
	dialect: PortDialect<P>,
): readonly { protocol: P; from?: number; to?: number }[] | 'any' | Problem {
	if (value === undefined || (Array.isArray(value) && value.length === 0)) return 'any'
	if (!Array.isArray(value)) return { problem: `${field} is not a list` }
	const ports: { protocol: P; from?: number; to?: number }[] = []
	for (const [index, entry] of value.entries()) {
		const at = `${field}[${index}]`
		if (!isRecord(entry)) return { problem: `${at} is not a port` }
		const protocol = entry.protocol ?? dialect.defaultProtocol
		if (!dialect.protocols.includes(protocol as P)) {
			return { problem: `${at}.protocol ${JSON.stringify(protocol)} is unknown` }
		}
		const port = dialect.readPort(entry.port)
		if (port === undefined) {
			return { problem: `${at}.port ${JSON.stringify(entry.port)} is a named or malformed port` }
		}
		if (port === 'all') {
			ports.push({ protocol: protocol as P })
			continue
		}
		const end = entry.endPort ?? port
		if (typeof end !== 'number' || !Number.isInteger(end) || end < port) {
			return { problem: `${at}.endPort is malformed` }
		}
		ports.push({ protocol: protocol as P, from: port, to: end })
	}
	return ports
}

const CORE_PORTS: PortDialect<CorePort['protocol']> = {
	protocols: ['TCP', 'UDP', 'SCTP'],
	defaultProtocol: 'TCP',
	readPort: (value) =>
		value === undefined ? 'all' : Number.isInteger(value) ? (value as number) : undefined,
}

const CILIUM_PORTS: PortDialect<CiliumPort['protocol']> = {
	protocols: ['TCP', 'UDP', 'SCTP', 'ANY'],
	defaultProtocol: 'ANY',
	// Cilium spells a port as a string; `'0'` (or none) is every port.
	readPort: (value) => {
		const text = value ?? '0'
		if (typeof text !== 'string' || !/^\d{1,5}$/.test(text)) return undefined
		return Number(text) === 0 ? 'all' : Number(text)
	},
}

/** A core rule's `ports`: `'any'` when absent or empty; a problem for a named or malformed port. */
export function readCorePorts(
	value: unknown,
	field: string,
): readonly CorePort[] | 'any' | Problem {
	return readPortList(value, field, CORE_PORTS)
}

/** One port of a Cilium `toPorts[].ports` entry. */
export interface CiliumPort {
	readonly protocol: 'TCP' | 'UDP' | 'SCTP' | 'ANY'
	/** `undefined`: every port (`port: '0'` or absent). */
	readonly from?: number
	readonly to?: number
}

export interface CiliumPortRule {
	readonly ports: readonly CiliumPort[] | 'any'
	readonly serverNames?: readonly string[]
	/** `rules.dns` match entries, when present. */
	readonly dns?: readonly { readonly matchName?: string; readonly matchPattern?: string }[]
	/** Whether the entry carries L7 rules other than `dns`. */
	readonly otherL7: boolean
}

/** A Cilium rule's `toPorts`: `'any'` when absent or empty. */
export function readCiliumToPorts(
	value: unknown,
	field: string,
): readonly CiliumPortRule[] | 'any' | Problem {
	if (value === undefined || (Array.isArray(value) && value.length === 0)) return 'any'
	if (!Array.isArray(value)) return { problem: `${field} is not a list` }
	const out: CiliumPortRule[] = []
	for (const [index, entry] of value.entries()) {
		const at = `${field}[${index}]`
		if (!isRecord(entry)) return { problem: `${at} is not a port rule` }
		const ports = readPortList(entry.ports, `${at}.ports`, CILIUM_PORTS)
		if (isProblem(ports)) return ports
		let serverNames: string[] | undefined
		if (entry.serverNames !== undefined) {
			if (
				!Array.isArray(entry.serverNames) ||
				!entry.serverNames.every((name) => typeof name === 'string')
			) {
				return { problem: `${at}.serverNames is not a list of names` }
			}
			serverNames = entry.serverNames
		}
		let dns: CiliumPortRule['dns']
		let otherL7 = false
		if (entry.rules !== undefined) {
			if (!isRecord(entry.rules)) return { problem: `${at}.rules is not an object` }
			for (const key of Object.keys(entry.rules)) if (key !== 'dns') otherL7 = true
			if (entry.rules.dns !== undefined) {
				if (!Array.isArray(entry.rules.dns)) return { problem: `${at}.rules.dns is not a list` }
				const matches: { matchName?: string; matchPattern?: string }[] = []
				for (const match of entry.rules.dns) {
					if (
						!isRecord(match) ||
						(match.matchName !== undefined && typeof match.matchName !== 'string') ||
						(match.matchPattern !== undefined && typeof match.matchPattern !== 'string')
					) {
						return { problem: `${at}.rules.dns holds an entry that is not a name or pattern` }
					}
					matches.push({
						...(typeof match.matchName === 'string' ? { matchName: match.matchName } : {}),
						...(typeof match.matchPattern === 'string' ? { matchPattern: match.matchPattern } : {}),
					})
				}
				dns = matches
			}
		}
		out.push({
			ports,
			...(serverNames === undefined ? {} : { serverNames }),
			...(dns === undefined ? {} : { dns }),
			otherL7,
		})
	}
	return out
}

/** A list of strings (Cilium `fromCIDR`, `toEntities`, …); a string alone is a problem. */
export function readStringList(value: unknown, field: string): readonly string[] | string {
	if (!Array.isArray(value) || !value.every((entry) => typeof entry === 'string')) {
		return `${field} is not a list of strings`
	}
	return value
}
