import { readdirSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import {
	BubblewrapUnavailableError,
	createLocalSandboxProvider,
	type LocalProviderHooks,
} from '../../../src/backends/local/index.js'
import { WarmPool } from '../../../src/backends/machine/fleet/warm-pool.js'
import type { SandboxProvider } from '../../../src/contract/provider.js'
import { bwrapSkipReason } from './bwrap-available.js'
import {
	cgroupDirsFor,
	freshStateDir,
	mountsUnder,
	processesMentioning,
	stateDirIds,
	waitFor,
} from './local-test-support.js'

const skip = bwrapSkipReason()

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
const providers: SandboxProvider[] = []
afterEach(async () => {
	await Promise.all(providers.splice(0).map((provider) => provider.close()))
})

/** A provider closed after the test whatever happens, plus the ids of its ready pool members. */
function pooledProvider(
	warmPoolSize: number,
	defaults: Parameters<typeof createLocalSandboxProvider>[1] = {},
	hooks: LocalProviderHooks = {},
) {
	const ready: string[] = []
	const provider = createLocalSandboxProvider(
		{ tier: 'process', stateDir, warmPoolSize },
		defaults,
		{
			...hooks,
			onWarmSandboxReady: (id) => ready.push(id),
		},
	)
	providers.push(provider)
	return { provider, ready }
}

function sandboxDirs(dir: string): string[] {
	return readdirSync(dir).filter((name) => name.startsWith('namzu-sbx-'))
}

describe.skipIf(skip !== undefined)(`the warm pool${skip ? ` (skipped: ${skip})` : ''}`, () => {
	it('hands out pre-started sandboxes, and after close() no process, mount, cgroup or state dir is left', async () => {
		const { provider, ready } = pooledProvider(4, {
			defaultMemoryLimitMb: 512,
			defaultMaxProcesses: 64,
		})
		// The pool fills in the background: four started, probed sandboxes.
		await waitFor(() => ready.length === 4, 20_000)
		const seen = new Set(ready)
		const cold = performance.now()
		const overridden = await provider.create({ env: { COLD: '1' } })
		const coldMs = performance.now() - cold
		seen.add(overridden.id)
		const acquireMs: number[] = []
		const sandboxes = []
		for (let i = 0; i < 4; i++) {
			const started = performance.now()
			const sandbox = await provider.create({ timeoutMs: 20_000 })
			acquireMs.push(performance.now() - started)
			sandboxes.push(sandbox)
		}
		// Every pooled sandbox is a real, probed, working one; ids are distinct.
		expect(new Set(sandboxes.map((s) => s.id)).size).toBe(4)
		for (const sandbox of sandboxes) {
			expect(ready.slice(0, 4)).toContain(sandbox.id)
			expect((await sandbox.exec('sh', ['-c', 'echo "$COLD"'])).stdout.trim()).toBe('')
		}
		expect((await overridden.exec('sh', ['-c', 'echo "$COLD"'])).stdout.trim()).toBe('1')
		// Replacements start in the background after each take.
		await waitFor(() => ready.length === 8, 20_000)
		for (const id of [...ready, ...stateDirIds(stateDir)]) seen.add(id)
		console.log(
			`[local tier] cold create (with an override) ${coldMs.toFixed(0)} ms; warm acquires ${acquireMs
				.map((ms) => ms.toFixed(1))
				.join(', ')} ms`,
		)
		await sandboxes[0]?.destroy()
		await provider.close()
		await waitFor(() => processesMentioning(stateDir).length === 0)
		expect(sandboxDirs(stateDir)).toEqual([])
		expect(mountsUnder(stateDir)).toEqual([])
		expect(cgroupDirsFor([...seen])).toEqual([])
		for (const sandbox of sandboxes) expect(sandbox.status).toBe('destroyed')
	})

	it('close() right after construction tears down sandboxes that are still starting', async () => {
		const { provider } = pooledProvider(3)
		await new Promise((resolve) => setTimeout(resolve, 30))
		await provider.close()
		await waitFor(() => processesMentioning(stateDir).length === 0)
		expect(sandboxDirs(stateDir)).toEqual([])
	})

	it('a request with overrides starts cold and does not drain the pool', async () => {
		const { provider, ready } = pooledProvider(1)
		await waitFor(() => ready.length === 1, 20_000)
		const [pooled] = ready
		const sandbox = await provider.create({ egress: { kind: 'allow-all' } })
		expect(sandbox.id).not.toBe(pooled)
		expect(stateDirIds(stateDir)).toContain(pooled)
		await provider.close()
		expect(sandboxDirs(stateDir)).toEqual([])
	})
})

describe('the warm pool replenishing', () => {
	it('retries failed starts with backoff, reports them, never rejects unhandled, and stops on close', async () => {
		const errors: unknown[] = []
		const provider = createLocalSandboxProvider(
			{ tier: 'process', stateDir, warmPoolSize: 2, bwrapPath: '/nonexistent/bwrap' },
			{},
			{ onBackgroundError: (error) => errors.push(error) },
		)
		await waitFor(() => errors.length >= 4, 5_000)
		expect(errors.every((error) => error instanceof BubblewrapUnavailableError)).toBe(true)
		// With the pool empty, create() starts cold and surfaces the real error.
		await expect(provider.create()).rejects.toBeInstanceOf(BubblewrapUnavailableError)
		await provider.close()
		const after = errors.length
		await new Promise((resolve) => setTimeout(resolve, 300))
		expect(errors.length).toBe(after)
	})

	it("starts a hand-out's replacement after the refill delay, not in the take; an empty pool's at once; never after close()", async () => {
		let started = 0
		const countingPool = (size: number, refillDelayMs: number) =>
			new WarmPool({
				size,
				refillDelayMs,
				start: async () => {
					started++
					return { hasExited: () => false, release: async () => {} }
				},
			})
		const pool = countingPool(2, 50)
		pool.fill()
		await waitFor(() => pool.readyCount === 2)
		expect(started).toBe(2)
		// The handed-out sandbox's first commands run before its replacement's launch begins.
		expect(pool.take()).toBeDefined()
		expect(pool.take()).toBeDefined()
		expect(started).toBe(2)
		await waitFor(() => pool.readyCount === 2)
		expect(started).toBe(4)
		// Two takes, one refill: it fills the pool back to its size, no more.
		const empty = countingPool(1, 60_000)
		// Nothing to hand out: the caller starts cold, and the pool starts refilling in the take.
		const before = started
		expect(empty.take()).toBeUndefined()
		expect(started).toBe(before + 1)
		await waitFor(() => empty.readyCount === 1)
		expect(empty.take()).toBeDefined()
		await empty.close()
		// A refill still pending at close() never starts (its delay is a minute: close cleared it).
		expect(started).toBe(before + 1)
		await pool.close()
	})

	it('skips a member that died while idle and releases it', async () => {
		const released: string[] = []
		let next = 0
		const pool = new WarmPool({
			size: 2,
			start: async () => {
				const name = `m${next++}`
				return {
					name,
					hasExited: () => name === 'm0',
					release: async () => {
						released.push(name)
					},
				}
			},
		})
		pool.fill()
		await waitFor(() => pool.readyCount === 2)
		expect(pool.take()?.name).toBe('m1')
		await pool.close()
		expect(released.sort()).toEqual(['m0', 'm2', 'm3'].filter((name) => released.includes(name)))
		expect(released).toContain('m0')
	})
})
