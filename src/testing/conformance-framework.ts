/**
 * The smallest structural shape of a test framework the conformance suite needs. Vitest's and
 * Jest's `describe` / `it` / `expect` satisfy it as they are; so does `createRecordingHarness()`.
 * Declared here so that shipping the suite adds no test-framework dependency to the package.
 */

/** What a framework may hand a running case; vitest's test context fits. */
export interface ConformanceCaseContext {
	/** Ends the running case as skipped (vitest's `context.skip` throws to do so). */
	readonly skip?: (note?: string) => unknown
}

export type ConformanceTestFn = (context?: ConformanceCaseContext) => Promise<void>

export interface ConformanceIt {
	(title: string, fn: ConformanceTestFn, timeoutMs?: number): void
	/** Registers a skipped case. When absent, the suite registers a case that only returns. */
	skip?: (title: string, fn: ConformanceTestFn) => void
}

export type ConformanceDescribe = (title: string, body: () => void) => void

/** The matchers the suite uses; each throws when its expectation does not hold. */
export interface ConformanceAssertion {
	toBe(expected: unknown): void
	toEqual(expected: unknown): void
	toBeGreaterThan(expected: number): void
	toBeGreaterThanOrEqual(expected: number): void
	toBeLessThanOrEqual(expected: number): void
	toMatch(expected: string | RegExp): void
	toContain(expected: unknown): void
	readonly not: ConformanceAssertion
}

/** `message` (vitest's second argument) says what is being checked when the assertion fails. */
export type ConformanceExpect = (actual: unknown, message?: string) => ConformanceAssertion

export interface ConformanceFramework {
	readonly describe: ConformanceDescribe
	readonly it: ConformanceIt
	readonly expect: ConformanceExpect
}
