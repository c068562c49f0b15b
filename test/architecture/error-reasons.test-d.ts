/**
 * Every error class an entry point exports names its reasons as a literal type, so a caller's
 * `switch (error.reason)` is checked by the compiler: walked over each entry's exports, no error
 * class but the base `SandboxError` itself has `reason: string`. (That every reason is kebab-case at
 * run time, `error-model.test.ts` checks by constructing each class.)
 */
import { describe, expectTypeOf, it } from 'vitest'
import type * as agent from '../../src/agent-entry.js'
import type { AgentUnauthorizedError } from '../../src/host/refusals/refusal-errors.js'
import type * as root from '../../src/index.js'
import type * as testing from '../../src/testing/index.js'
import type * as tools from '../../src/tools/index.js'

/** The exported names of `Entry` that are classes of `SandboxError`s whose `reason` is `string`. */
type WideReasons<Entry> = {
	[K in keyof Entry]: K extends 'SandboxError'
		? never
		: Entry[K] extends abstract new (
					...args: never[]
				) => infer I
			? I extends root.SandboxError
				? string extends I['reason']
					? K
					: never
				: never
			: never
}[keyof Entry]

describe('error reasons are literal types', () => {
	it('on the root, ./agent, ./testing and ./tools', () => {
		expectTypeOf<WideReasons<typeof root>>().toEqualTypeOf<never>()
		expectTypeOf<WideReasons<typeof agent>>().toEqualTypeOf<never>()
		expectTypeOf<WideReasons<typeof testing>>().toEqualTypeOf<never>()
		expectTypeOf<WideReasons<typeof tools>>().toEqualTypeOf<never>()
	})

	it('the walk finds a class whose reason is only a string', () => {
		class Wide extends (Object as unknown as typeof root.SandboxError) {}
		expectTypeOf<WideReasons<{ Wide: typeof Wide }>>().toEqualTypeOf<'Wide'>()
	})

	it('a subclass narrows its parent reason', () => {
		expectTypeOf<
			InstanceType<typeof AgentUnauthorizedError>['reason']
		>().toEqualTypeOf<'unauthorized'>()
		expectTypeOf<
			InstanceType<typeof root.SandboxDestroyedError>['reason']
		>().toEqualTypeOf<'destroyed'>()
	})
})
