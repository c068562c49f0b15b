/**
 * `await using` on what the package hands out: every sandbox and every provider is
 * `AsyncDisposable`, so a scope ends them (the local tier's lifecycle test runs it for real).
 */
import { describe, expectTypeOf, it } from 'vitest'
import type * as root from '../../src/index.js'

describe('package root: await using', () => {
	it('makes every Sandbox and SandboxProvider AsyncDisposable', () => {
		expectTypeOf<root.Sandbox>().toExtend<AsyncDisposable>()
		expectTypeOf<root.SandboxProvider>().toExtend<AsyncDisposable>()
		expectTypeOf<root.Sandbox[typeof Symbol.asyncDispose]>().toEqualTypeOf<() => Promise<void>>()
		expectTypeOf<ReturnType<typeof root.createSandboxProvider>>().toExtend<AsyncDisposable>()
	})

	it("makes each tier's sandbox and provider AsyncDisposable", () => {
		expectTypeOf<root.LocalSandbox>().toExtend<AsyncDisposable>()
		expectTypeOf<root.LocalSandboxProvider>().toExtend<AsyncDisposable>()
		expectTypeOf<root.ContainerSandbox>().toExtend<AsyncDisposable>()
		expectTypeOf<root.ContainerSandboxProvider>().toExtend<AsyncDisposable>()
		expectTypeOf<root.KubernetesTaskSandbox>().toExtend<AsyncDisposable>()
		expectTypeOf<root.KubernetesWorkspace>().toExtend<AsyncDisposable>()
	})

	it('compiles `await using` on a created sandbox and on a provider', () => {
		async function scoped(
			create: typeof root.createSandboxProvider,
			config: root.SandboxProviderConfig,
		): Promise<number> {
			await using provider = create(config)
			await using sandbox = await provider.create()
			return (await sandbox.exec('true')).exitCode
		}
		expectTypeOf(scoped).returns.resolves.toBeNumber()
	})
})
