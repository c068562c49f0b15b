import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SandboxConfigError } from '../src/contract/errors.js'
import { createSandboxProvider } from '../src/create-sandbox-provider.js'
import { freshStateDir } from './backends/local/local-test-support.js'

type Config = Parameters<typeof createSandboxProvider>[0]

/** What `createSandboxProvider` throws for `backend`, which the types would refuse. */
function refusal(backend: Record<string, unknown>): unknown {
	try {
		createSandboxProvider({ backend } as unknown as Config)
	} catch (error) {
		return error
	}
	return undefined
}

let stateDir = ''
let removeState: () => Promise<void>
beforeAll(async () => {
	const state = await freshStateDir()
	stateDir = state.dir
	removeState = state.remove
})
afterAll(async () => {
	await removeState?.()
})

describe('createSandboxProvider: backend.tier', () => {
	it.each([
		['local', "the local bubblewrap tier is 'process'"],
		['docker', "are 'container'"],
		['kubernetes', "'microvm' with service: 'kubernetes'"],
	])(
		'a natural guess (%s) is a SandboxConfigError listing the tiers and naming the right one',
		(tier, hint) => {
			const error = refusal({ tier })
			expect(error).toBeInstanceOf(SandboxConfigError)
			expect(error).toMatchObject({
				field: 'backend.tier',
				reason: 'invalid-config',
				retryable: false,
				expected: "one of 'process', 'container', 'microvm'",
				received: JSON.stringify(tier),
			})
			expect((error as Error).message).toContain(hint)
		},
	)

	it.each([
		['an unknown name', 'foo', '"foo"'],
		['a missing tier', undefined, 'undefined'],
		['a number', 42, '42'],
	])('%s is a SandboxConfigError listing the tiers', (_, tier, received) => {
		const error = refusal({ tier })
		expect(error).toBeInstanceOf(SandboxConfigError)
		expect(error).toMatchObject({ field: 'backend.tier', received })
		expect((error as Error).message).toBe(
			`backend.tier: must be one of 'process', 'container', 'microvm', got ${received}`,
		)
	})

	it('a known tier still builds its provider (positive control)', async () => {
		const provider = createSandboxProvider({ backend: { tier: 'process', stateDir } })
		expect(provider.name).toBe('@namzu/sandbox:process:bubblewrap')
		await provider.close()
	})
})
