// Public surface of @namzu/sandbox/testing: the Sandbox contract suite and a framework-free harness.

export { ConformanceAssertionError, ConformanceCaseTimeoutError } from './conformance-errors.js'
export type {
	ConformanceAssertion,
	ConformanceCaseContext,
	ConformanceDescribe,
	ConformanceExpect,
	ConformanceFramework,
	ConformanceIt,
	ConformanceTestFn,
} from './conformance-framework.js'
export type {
	ConformanceCapabilities,
	ConformanceCapability,
	ConformanceSandbox,
	GuestListenerCommand,
	MakeSandbox,
	OptionalSandboxMember,
	SandboxConformanceOptions,
} from './conformance-options.js'
export { createMinimalExpect } from './minimal-expect.js'
export type {
	RecordedCase,
	RecordedOutcome,
	RecordingHarness,
	RecordingHarnessOptions,
} from './recording-harness.js'
export { createRecordingHarness } from './recording-harness.js'
export { defineSandboxConformance, SANDBOX_CONTRACT_VERSION } from './sandbox-conformance.js'
