/**
 * The warm-start snapshot cache: an entry appears whole or not at all; one build per key per
 * process; two builders of one key (two processes) each build and the first rename wins; a failed
 * or aborted build leaves nothing; the reaper takes partial builds of dead builders and idle
 * entries, never a live builder's or a used entry.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { readProcessIdentity } from '../../../../src/backends/machine/claims/process-identity.js'
import {
	cachedSnapshot,
	discardCachedSnapshot,
	findCachedSnapshot,
	SNAPSHOT_IDLE_MS,
	staleCachedSnapshots,
} from '../../../../src/backends/machine/snapshots/snapshot-cache.js'

const KEY = '0123456789abcdef0123456789abcdef'
let base = ''
const cache = () => join(base, 'namzu-snapshot-cache')

beforeEach(async () => {
	base = await mkdtemp(join(tmpdir(), 'namzu-snapcache-test-'))
})
afterEach(async () => {
	await rm(base, { recursive: true, force: true })
})

/** A build that waits for `release` before writing its mark. */
function gatedBuild(mark: string) {
	let release: () => void = () => undefined
	const gate = new Promise<void>((resolve) => {
		release = resolve
	})
	let runs = 0
	const build = async (dir: string) => {
		runs += 1
		await gate
		await writeFile(join(dir, 'state.bin'), mark)
	}
	return { build, release: () => release(), runs: () => runs }
}

describe('warm-start snapshot cache', () => {
	it('shares one build between concurrent requests for a key in one process', async () => {
		const gated = gatedBuild('one')
		const first = cachedSnapshot(base, KEY, gated.build)
		const second = cachedSnapshot(base, KEY, gated.build)
		await new Promise((resolve) => setTimeout(resolve, 50))
		gated.release()
		const [a, b] = await Promise.all([first, second])
		expect(gated.runs()).toBe(1)
		expect(a.dir).toBe(b.dir)
		expect([a.built, b.built].sort()).toEqual([false, true])
		expect(await readFile(join(a.dir, 'state.bin'), 'utf8')).toBe('one')
		// Found from now on without a build.
		const again = await cachedSnapshot(base, KEY, () => Promise.reject(new Error('no build')))
		expect(again).toEqual({ dir: a.dir, built: false })
		expect(await readdir(cache())).toEqual([KEY])
	})

	it('two builders of one key (as two processes) each build; the first rename wins, nothing partial stays', async () => {
		const one = gatedBuild('one')
		const two = gatedBuild('two')
		// The same directory under two spellings: two independent builders, as two processes are.
		const first = cachedSnapshot(base, KEY, one.build)
		const second = cachedSnapshot(`${base}/.`, KEY, two.build)
		await new Promise((resolve) => setTimeout(resolve, 50))
		one.release()
		const a = await first
		two.release()
		const b = await second
		expect([one.runs(), two.runs()]).toEqual([1, 1])
		expect(a).toEqual({ dir: join(cache(), KEY), built: true })
		expect(b).toEqual({ dir: join(cache(), KEY), built: false })
		expect(await readFile(join(a.dir, 'state.bin'), 'utf8')).toBe('one')
		expect(await readdir(cache())).toEqual([KEY])
	})

	it('a failed build leaves nothing and the next request builds; an aborted one rejects with the reason', async () => {
		await expect(
			cachedSnapshot(base, KEY, async (dir) => {
				await writeFile(join(dir, 'half'), 'x')
				throw new Error('boot failed')
			}),
		).rejects.toThrow('boot failed')
		expect(await readdir(cache())).toEqual([])
		const controller = new AbortController()
		const aborted = cachedSnapshot(
			base,
			KEY,
			async () => {
				controller.abort(new Error('caller gave up'))
			},
			controller.signal,
		)
		await expect(aborted).rejects.toThrow('caller gave up')
		expect(await readdir(cache())).toEqual([])
		const built = await cachedSnapshot(base, KEY, (dir) => writeFile(join(dir, 'state.bin'), 'x'))
		expect(built.built).toBe(true)
		await discardCachedSnapshot(base, KEY)
		expect(await findCachedSnapshot(base, KEY)).toBeUndefined()
		expect(await readdir(cache())).toEqual([])
	})

	it('reaps partial builds of dead builders and idle entries; keeps a live build and a used entry', async () => {
		const self = await readProcessIdentity(process.pid)
		await mkdir(cache(), { recursive: true })
		const live = join(cache(), `.partial-${process.pid}-${self?.startTime}-0a0b0c0d`)
		// A pid that cannot be alive (above pid_max's ceiling).
		const dead = join(cache(), '.partial-4194305-1-0a0b0c0d')
		const idle = join(cache(), 'fedcba9876543210fedcba9876543210')
		const used = join(cache(), KEY)
		for (const dir of [live, dead, idle, used]) await mkdir(dir)
		const old = new Date(Date.now() - SNAPSHOT_IDLE_MS - 60_000)
		await utimes(idle, old, old)
		await utimes(used, old, old)
		// Starting from an entry renews it.
		expect(await findCachedSnapshot(base, KEY)).toBe(used)

		expect((await staleCachedSnapshots(base, Date.now(), true)).sort()).toEqual([dead, idle].sort())
		expect((await readdir(cache())).length).toBe(4)
		expect((await staleCachedSnapshots(base, Date.now(), false)).sort()).toEqual(
			[dead, idle].sort(),
		)
		expect((await readdir(cache())).sort()).toEqual(
			[KEY, `.partial-${process.pid}-${self?.startTime}-0a0b0c0d`].sort(),
		)
	})
})
