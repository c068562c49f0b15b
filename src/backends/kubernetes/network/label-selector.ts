/**
 * Label selectors as the API server evaluates them (`matchLabels` AND every `matchExpressions`
 * term), read defensively: a selector that is not the declared shape is `unreadable`, never an
 * empty selector — an empty one selects everything, so misreading would widen or narrow what a
 * policy applies to. Pure.
 *
 * Cilium's endpoint selectors use the same shape with source-prefixed keys (`k8s:app`,
 * `any:app`); `selectorKey` strips the prefix, and the pod's namespace is the pseudo-label
 * `io.kubernetes.pod.namespace` there.
 */
import { isRecord, isStringRecord } from '../../../common/is-record.js'

export type SelectorOperator = 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'

export interface SelectorTerm {
	readonly key: string
	readonly operator: SelectorOperator
	readonly values: readonly string[]
}

export interface LabelSelector {
	readonly matchLabels: Readonly<Record<string, string>>
	readonly matchExpressions: readonly SelectorTerm[]
}

export type ReadSelector =
	| { readonly ok: true; readonly selector: LabelSelector }
	| { readonly ok: false; readonly problem: string }

const OPERATORS: readonly string[] = ['In', 'NotIn', 'Exists', 'DoesNotExist']
const SOURCE_PREFIXES = ['k8s:', 'any:']

/** `k8s:app` → `app`; keys without a known source prefix stay as they are. */
export function selectorKey(key: string, cilium: boolean): string {
	if (!cilium) return key
	for (const prefix of SOURCE_PREFIXES) if (key.startsWith(prefix)) return key.slice(prefix.length)
	return key
}

/** Reads a `LabelSelector` wire value; `field` names it in the problem. */
export function readSelector(value: unknown, field: string, cilium = false): ReadSelector {
	if (!isRecord(value)) return { ok: false, problem: `${field} is not a label selector` }
	for (const key of Object.keys(value)) {
		if (key !== 'matchLabels' && key !== 'matchExpressions') {
			return { ok: false, problem: `${field}.${key} is not a selector field` }
		}
	}
	const labels = value.matchLabels ?? {}
	if (!isStringRecord(labels)) {
		return { ok: false, problem: `${field}.matchLabels is not a map of strings` }
	}
	const expressions = value.matchExpressions ?? []
	if (!Array.isArray(expressions)) {
		return { ok: false, problem: `${field}.matchExpressions is not a list` }
	}
	const terms: SelectorTerm[] = []
	for (const [index, term] of expressions.entries()) {
		const at = `${field}.matchExpressions[${index}]`
		if (!isRecord(term) || typeof term.key !== 'string') {
			return { ok: false, problem: `${at} has no key` }
		}
		if (typeof term.operator !== 'string' || !OPERATORS.includes(term.operator)) {
			return { ok: false, problem: `${at}.operator ${JSON.stringify(term.operator)} is unknown` }
		}
		const values = term.values ?? []
		if (!Array.isArray(values) || !values.every((entry) => typeof entry === 'string')) {
			return { ok: false, problem: `${at}.values is not a list of strings` }
		}
		terms.push({
			key: selectorKey(term.key, cilium),
			operator: term.operator as SelectorOperator,
			values,
		})
	}
	const matchLabels: Record<string, string> = {}
	for (const [key, label] of Object.entries(labels)) matchLabels[selectorKey(key, cilium)] = label
	return { ok: true, selector: { matchLabels, matchExpressions: terms } }
}

/** Whether `selector` selects an object carrying `labels`. */
export function selectorMatches(
	selector: LabelSelector,
	labels: Readonly<Record<string, string>>,
): boolean {
	for (const [key, value] of Object.entries(selector.matchLabels)) {
		if (labels[key] !== value) return false
	}
	return selector.matchExpressions.every((term) => termMatches(term, labels[term.key]))
}

function termMatches(term: SelectorTerm, value: string | undefined): boolean {
	switch (term.operator) {
		case 'In':
			return value !== undefined && term.values.includes(value)
		case 'NotIn':
			return value === undefined || !term.values.includes(value)
		case 'Exists':
			return value !== undefined
		case 'DoesNotExist':
			return value === undefined
	}
}

/** Whether the selector selects every object (`{}`). */
export function selectsEverything(selector: LabelSelector): boolean {
	return Object.keys(selector.matchLabels).length === 0 && selector.matchExpressions.length === 0
}

/**
 * Whether every object `selector` selects carries `key: value` — the conservative question the
 * union check asks of a peer ("only the resolver's namespace?"): true only when the selector
 * requires it outright, by `matchLabels` or an `In` term naming that one value.
 */
export function selectorRequires(selector: LabelSelector, key: string, value: string): boolean {
	if (selector.matchLabels[key] === value) return true
	return selector.matchExpressions.some(
		(term) =>
			term.key === key &&
			term.operator === 'In' &&
			term.values.length > 0 &&
			term.values.every((entry) => entry === value),
	)
}
