/**
 * What the conformance suite's own framework throws: a failed expectation of `createMinimalExpect`
 * and a case of `createRecordingHarness` that did not settle in time. (A case skipped from inside
 * its body ends with a private signal that `sandbox-conformance.ts` catches; it never escapes.)
 */
import { SandboxError } from '../contract/errors.js'

/** One failed expectation. `matcher` names the check, e.g. `not.toBe`. */
export class ConformanceAssertionError extends SandboxError<'assertion-failed'> {
	override readonly name = 'ConformanceAssertionError'
	readonly matcher: string

	constructor(matcher: string, message: string) {
		super(message, 'assertion-failed')
		this.matcher = matcher
	}
}

/** A case that did not settle within its bound. It may still be running in the background. */
export class ConformanceCaseTimeoutError extends SandboxError<'case-timeout'> {
	override readonly name = 'ConformanceCaseTimeoutError'
	readonly timeoutMs: number

	constructor(title: string, timeoutMs: number) {
		super(`case did not finish within ${timeoutMs} ms: ${title}`, 'case-timeout')
		this.timeoutMs = timeoutMs
	}
}
