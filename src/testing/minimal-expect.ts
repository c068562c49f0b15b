/**
 * A dependency-free `expect` with exactly the matchers the conformance suite uses, so the suite can
 * run without any test framework (see `createRecordingHarness`).
 */
import { inspect, isDeepStrictEqual } from 'node:util'
import { ConformanceAssertionError } from './conformance-errors.js'
import type { ConformanceAssertion, ConformanceExpect } from './conformance-framework.js'

function show(value: unknown): string {
	return inspect(value, { depth: 4, maxArrayLength: 20, maxStringLength: 200, breakLength: 120 })
}

function contains(actual: unknown, item: unknown): boolean {
	if (typeof actual === 'string') return typeof item === 'string' && actual.includes(item)
	if (Array.isArray(actual)) return actual.some((element) => element === item)
	return false
}

function assertion(
	actual: unknown,
	negated: boolean,
	label: string | undefined,
): ConformanceAssertion {
	const check = (matcher: string, holds: boolean, expectation: string) => {
		if (holds !== negated) return
		const name = negated ? `not.${matcher}` : matcher
		const prefix = label === undefined ? '' : `${label}: `
		throw new ConformanceAssertionError(
			name,
			`${prefix}expected ${show(actual)} ${negated ? 'not ' : ''}${expectation}`,
		)
	}
	const number = (value: unknown): number => (typeof value === 'number' ? value : Number.NaN)
	return {
		toBe: (expected) => check('toBe', Object.is(actual, expected), `to be ${show(expected)}`),
		toEqual: (expected) =>
			check('toEqual', isDeepStrictEqual(actual, expected), `to equal ${show(expected)}`),
		toBeGreaterThan: (expected) =>
			check('toBeGreaterThan', number(actual) > expected, `to be greater than ${expected}`),
		toBeGreaterThanOrEqual: (expected) =>
			check('toBeGreaterThanOrEqual', number(actual) >= expected, `to be at least ${expected}`),
		toBeLessThanOrEqual: (expected) =>
			check('toBeLessThanOrEqual', number(actual) <= expected, `to be at most ${expected}`),
		toMatch: (expected) =>
			check(
				'toMatch',
				typeof actual === 'string' &&
					(typeof expected === 'string' ? actual.includes(expected) : expected.test(actual)),
				`to match ${show(expected)}`,
			),
		toContain: (expected) =>
			check('toContain', contains(actual, expected), `to contain ${show(expected)}`),
		get not() {
			return assertion(actual, !negated, label)
		},
	}
}

/** The suite's matchers without a test framework. */
export function createMinimalExpect(): ConformanceExpect {
	return (actual, message) => assertion(actual, false, message)
}
