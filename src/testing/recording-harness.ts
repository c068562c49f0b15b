/**
 * A framework of its own for the conformance suite: `describe` / `it` / `expect` that record every
 * registered case (with its describe path) and run them on demand, one at a time, capturing each
 * outcome instead of reporting it. Used to test the suite itself and to run it outside a test
 * runner (a smoke check of a new backend, a health probe).
 */

import { ConformanceCaseTimeoutError } from './conformance-errors.js'
import type {
	ConformanceExpect,
	ConformanceFramework,
	ConformanceTestFn,
} from './conformance-framework.js'
import { createMinimalExpect } from './minimal-expect.js'

/** One case the harness recorded. */
export interface RecordedCase {
	readonly title: string
	/** Enclosing describe titles, outermost first. */
	readonly path: readonly string[]
	readonly fullTitle: string
	readonly skipped: boolean
	readonly timeoutMs?: number
	readonly fn: ConformanceTestFn
}

/** How one recorded case ran. */
export interface RecordedOutcome {
	readonly title: string
	readonly fullTitle: string
	readonly status: 'passed' | 'failed' | 'skipped'
	readonly error?: unknown
	readonly durationMs: number
}

/** Options of `createRecordingHarness`. */
export interface RecordingHarnessOptions {
	/** Default: `createMinimalExpect()`. Vitest's `expect` works too. */
	readonly expect?: ConformanceExpect
	/** Per-case bound when the case registers none. Default 60 000. */
	readonly defaultTimeoutMs?: number
}

/** A framework-free harness: records the suite's cases and runs them. */
export interface RecordingHarness {
	readonly framework: ConformanceFramework
	readonly cases: readonly RecordedCase[]
	/** Runs the (selected) cases sequentially; never throws for a failing case. */
	run(select?: (testCase: RecordedCase) => boolean): Promise<RecordedOutcome[]>
}

async function runBounded(testCase: RecordedCase, timeoutMs: number): Promise<void> {
	let timer: NodeJS.Timeout | undefined
	const expired = new Promise<never>((_, reject) => {
		timer = setTimeout(
			() => reject(new ConformanceCaseTimeoutError(testCase.fullTitle, timeoutMs)),
			timeoutMs,
		)
	})
	try {
		await Promise.race([testCase.fn(), expired])
	} finally {
		clearTimeout(timer)
	}
}

/** A harness that records cases for running outside any test framework. */
export function createRecordingHarness(options: RecordingHarnessOptions = {}): RecordingHarness {
	const cases: RecordedCase[] = []
	const path: string[] = []
	const record = (title: string, fn: ConformanceTestFn, skipped: boolean, timeoutMs?: number) => {
		cases.push({
			title,
			path: [...path],
			fullTitle: [...path, title].join(' > '),
			skipped,
			...(timeoutMs === undefined ? {} : { timeoutMs }),
			fn,
		})
	}
	const it = Object.assign(
		(title: string, fn: ConformanceTestFn, timeoutMs?: number) =>
			record(title, fn, false, timeoutMs),
		{ skip: (title: string, fn: ConformanceTestFn) => record(title, fn, true) },
	)
	const describe = (title: string, body: () => void) => {
		path.push(title)
		try {
			body()
		} finally {
			path.pop()
		}
	}
	const defaultTimeoutMs = options.defaultTimeoutMs ?? 60_000
	return {
		framework: { describe, it, expect: options.expect ?? createMinimalExpect() },
		cases,
		async run(select = () => true) {
			const outcomes: RecordedOutcome[] = []
			for (const testCase of cases.filter(select)) {
				const { title, fullTitle } = testCase
				if (testCase.skipped) {
					outcomes.push({ title, fullTitle, status: 'skipped', durationMs: 0 })
					continue
				}
				const started = Date.now()
				try {
					await runBounded(testCase, testCase.timeoutMs ?? defaultTimeoutMs)
					outcomes.push({ title, fullTitle, status: 'passed', durationMs: Date.now() - started })
				} catch (error) {
					outcomes.push({
						title,
						fullTitle,
						status: 'failed',
						error,
						durationMs: Date.now() - started,
					})
				}
			}
			return outcomes
		},
	}
}
