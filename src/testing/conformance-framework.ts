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

/** One case's body. */
export type ConformanceTestFn = (context?: ConformanceCaseContext) => Promise<void>

/** Registers a case (vitest's and jest's `it` fit). */
export interface ConformanceIt {
	/** Registers the case `title`, bounded by `timeoutMs` when given. */
	(title: string, fn: ConformanceTestFn, timeoutMs?: number): void
	/** Registers a skipped case. When absent, the suite registers a case that only returns. */
	skip?: (title: string, fn: ConformanceTestFn) => void
}

/** Groups cases under a title (vitest's and jest's `describe` fit). */
export type ConformanceDescribe = (title: string, body: () => void) => void

/** The matchers the suite uses; each throws when its expectation does not hold. */
export interface ConformanceAssertion {
	/** Same value (`Object.is`). */
	toBe(expected: unknown): void
	/** Deeply equal. */
	toEqual(expected: unknown): void
	/** A number above `expected`. */
	toBeGreaterThan(expected: number): void
	/** A number at least `expected`. */
	toBeGreaterThanOrEqual(expected: number): void
	/** A number at most `expected`. */
	toBeLessThanOrEqual(expected: number): void
	/** A string matching the pattern (or containing the string). */
	toMatch(expected: string | RegExp): void
	/** A string or array containing `expected`. */
	toContain(expected: unknown): void
	readonly not: ConformanceAssertion
}

/** `message` (vitest's second argument) says what is being checked when the assertion fails. */
export type ConformanceExpect = (actual: unknown, message?: string) => ConformanceAssertion

/** The test framework the suite registers its cases with. */
export interface ConformanceFramework {
	readonly describe: ConformanceDescribe
	readonly it: ConformanceIt
	readonly expect: ConformanceExpect
}
