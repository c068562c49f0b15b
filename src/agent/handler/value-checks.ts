/**
 * The agent's one set of value checks (pure), used by every config reader and request parser: safe
 * integers in a range, string arrays, string records, and the integer variables of the agent's
 * environment. The agent may import only itself and the wire, so this is its own set, not the
 * host's; callers keep their own refusal codes and only share the judgement.
 */
import { AgentConfigError } from './config-error.js'

export interface IntegerRange {
	readonly min: number
	readonly max?: number
}

export const POSITIVE_INTEGER: IntegerRange = { min: 1 }
export const NON_NEGATIVE_INTEGER: IntegerRange = { min: 0 }

/** A safe integer inside `range` (bounds inclusive). */
export function isIntegerIn(value: unknown, range: IntegerRange): value is number {
	return (
		typeof value === 'number' &&
		Number.isSafeInteger(value) &&
		value >= range.min &&
		(range.max === undefined || value <= range.max)
	)
}

/** `a positive safe integer`, `a non-negative safe integer`, `an integer in 0..65535`. */
export function describeIntegerRange(range: IntegerRange): string {
	if (range.max !== undefined) return `an integer in ${range.min}..${range.max}`
	if (range.min === 1) return 'a positive safe integer'
	if (range.min === 0) return 'a non-negative safe integer'
	return `a safe integer ≥ ${range.min}`
}

export { isStringRecord } from '../../common/is-record.js'

export function isStringArray(value: unknown): value is string[] {
	return Array.isArray(value) && value.every((entry) => typeof entry === 'string')
}

type Env = Readonly<Record<string, string | undefined>>

/**
 * An integer environment variable: `fallback` when unset or empty, else decimal digits inside
 * `range`, or startup is refused with `AgentConfigError` naming the variable and the raw value.
 */
export function integerVariable(
	env: Env,
	name: string,
	fallback: number,
	range: IntegerRange,
): number {
	const raw = env[name]
	if (raw === undefined || raw === '') return fallback
	const value = /^\d+$/.test(raw.trim()) ? Number(raw) : Number.NaN
	if (!isIntegerIn(value, range)) {
		throw new AgentConfigError(
			`${name} must be ${describeIntegerRange(range)}, got ${JSON.stringify(raw)}`,
			name,
		)
	}
	return value
}
