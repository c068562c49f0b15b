import { isRecord } from '../../../common/is-record.js'
/**
 * The first place two JSON values differ, as a field path (`spec.egress[0].ports[1].port`): what
 * the named-object check reports when the applied policy is not the translation. Pure. Exact, with
 * one equivalence: an absent list and an empty one (the API server drops an empty `egress`).
 */

export interface PolicyDifference {
	readonly field: string
	readonly expected: string | undefined
	readonly actual: string | undefined
}

function json(value: unknown): string | undefined {
	return value === undefined ? undefined : JSON.stringify(value)
}

function isEmptyList(value: unknown): boolean {
	return value === undefined || (Array.isArray(value) && value.length === 0)
}

/** `undefined` when `actual` deep-equals `expected`. */
export function firstDifference(
	expected: unknown,
	actual: unknown,
	field: string,
): PolicyDifference | undefined {
	if (Array.isArray(expected) || Array.isArray(actual)) {
		if (isEmptyList(expected) && isEmptyList(actual)) return undefined
		if (!Array.isArray(expected) || !Array.isArray(actual)) {
			return { field, expected: json(expected), actual: json(actual) }
		}
		const length = Math.max(expected.length, actual.length)
		for (let index = 0; index < length; index++) {
			const found = firstDifference(expected[index], actual[index], `${field}[${index}]`)
			if (found) return found
		}
		return undefined
	}
	if (isRecord(expected) && isRecord(actual)) {
		const keys = [...new Set([...Object.keys(expected), ...Object.keys(actual)])]
		for (const key of keys) {
			const found = firstDifference(expected[key], actual[key], `${field}.${key}`)
			if (found) return found
		}
		return undefined
	}
	return Object.is(expected, actual)
		? undefined
		: { field, expected: json(expected), actual: json(actual) }
}
