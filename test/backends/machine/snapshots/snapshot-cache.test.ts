/**
 * The warm-start snapshot cache: an entry appears whole or not at all; one build per key per
 * process; a second builder of one key waits for the first under the key's lock (bounded,
 * abortable); a failed or aborted build leaves nothing; the reaper takes partial builds of dead
 * builders and idle entries, never a live builder's or a used entry; a build evicts the least
 * recently used entries beyond the bound, never one a start holds. Two real processes in
 * snapshot-cache-processes.test.ts.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { takeFileLock } from '../../../../src/backends/machine/claims/file-lock.js'
import { readProcessIdentity } from '../../../../src/backends/machine/claims/process-identity.js'
import {
	cachedSnapshot,
	discardCachedSnapshot,
	findCachedSnapshot,
	SNAPSHOT_IDLE_MS,
	staleCachedSnapshots,
	withCachedSnapshot,
} from '../../../../src/backends/machine/snapshots/snapshot-cache.js'
import { waitFor } from '../../local/local-test-support.js'
import { lockProcesses } from './snapshot-cache-support.js'

const KEY = '0123456789abcdef0123456789abcdef'
const OPTIONS = { buildWaitMs: 60_000, maxEntries: 4 }
let base = ''
const cache = () => join(base, 'namzu-snapshot-cache')
/** The cache's directories (the keys' empty lock files aside). */
const entries = async () => (await readdir(cache())).filter((name) => !name.startsWith('.lock-'))

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
		const first = cachedSnapshot(base, KEY, gated.build, OPTIONS)
		const second = cachedSnapshot(base, KEY, gated.build, OPTIONS)
		await new Promise((resolve) => setTimeout(resolve, 50))
		gated.release()
		const [a, b] = await Promise.all([first, second])
		expect(gated.runs()).toBe(1)
		expect(a.dir).toBe(b.dir)
		expect([a.built, b.built].sort()).toEqual([false, true])
		expect(await readFile(join(a.dir, 'state.bin'), 'utf8')).toBe('one')
		// Found from now on without a build.
		const again = await cachedSnapshot(
			base,
			KEY,
			() => Promise.reject(new Error('no build')),
			OPTIONS,
		)
		expect(again).toEqual({ dir: a.dir, built: false })
		expect(await entries()).toEqual([KEY])
	})

	it('a second builder of one key waits under its lock for the first build and uses its entry', async () => {
		const one = gatedBuild('one')
		const two = gatedBuild('two')
		// The same directory under two spellings: two independent builders, as two processes are.
		const first = cachedSnapshot(base, KEY, one.build, OPTIONS)
		await waitFor(() => one.runs() === 1)
		const second = cachedSnapshot(`${base}/.`, KEY, two.build, OPTIONS)
		await new Promise((resolve) => setTimeout(resolve, 200))
		expect(two.runs()).toBe(0)
		one.release()
		two.release()
		const [a, b] = await Promise.all([first, second])
		expect([one.runs(), two.runs()]).toEqual([1, 0])
		expect(a).toEqual({ dir: join(cache(), KEY), built: true })
		expect(b).toEqual({ dir: join(`${base}/.`, 'namzu-snapshot-cache', KEY), built: false })
		expect(await readFile(join(a.dir, 'state.bin'), 'utf8')).toBe('one')
		expect(await entries()).toEqual([KEY])
	})

	it('past its bound a waiting builder builds too (the rename decides); an abort ends the wait', async () => {
		await mkdir(cache(), { recursive: true })
		const held = await takeFileLock(join(cache(), `.lock-${KEY}`), { waitMs: 0 })
		if (!held) throw new Error('lock not taken')
		try {
			const controller = new AbortController()
			const waiting = cachedSnapshot(base, KEY, () => Promise.reject(new Error('no build')), {
				...OPTIONS,
				signal: controller.signal,
			})
			// Aborted while its flock(1) waits beside the holder's.
			await waitFor(() => lockProcesses(cache(), KEY).length >= 2)
			controller.abort(new Error('caller gave up'))
			await expect(waiting).rejects.toThrow('caller gave up')
			await waitFor(() => lockProcesses(cache(), KEY).length === 1)
			const bounded = await cachedSnapshot(
				base,
				KEY,
				(dir) => writeFile(join(dir, 'state.bin'), 'x'),
				{ ...OPTIONS, buildWaitMs: 200 },
			)
			expect(bounded).toEqual({ dir: join(cache(), KEY), built: true })
		} finally {
			await held.release()
		}
		expect(await entries()).toEqual([KEY])
	})

	it('a failed build leaves nothing and the next request builds; an aborted one rejects with the reason', async () => {
		await expect(
			cachedSnapshot(
				base,
				KEY,
				async (dir) => {
					await writeFile(join(dir, 'half'), 'x')
					throw new Error('boot failed')
				},
				OPTIONS,
			),
		).rejects.toThrow('boot failed')
		expect(await entries()).toEqual([])
		const controller = new AbortController()
		const aborted = cachedSnapshot(
			base,
			KEY,
			async () => {
				controller.abort(new Error('caller gave up'))
			},
			{ ...OPTIONS, signal: controller.signal },
		)
		await expect(aborted).rejects.toThrow('caller gave up')
		expect(await entries()).toEqual([])
		const built = await cachedSnapshot(
			base,
			KEY,
			(dir) => writeFile(join(dir, 'state.bin'), 'x'),
			OPTIONS,
		)
		expect(built.built).toBe(true)
		await discardCachedSnapshot(base, KEY)
		expect(await findCachedSnapshot(base, KEY)).toBeUndefined()
		expect(await entries()).toEqual([])
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

	it('a build evicts the least recently used entries beyond the bound, never one a start holds', async () => {
		const keys = ['a', 'b', 'c', 'd'].map((letter) => letter.repeat(32))
		const [held, oldest, middle, fresh] = keys as [string, string, string, string]
		const build = (dir: string) => writeFile(join(dir, 'state.bin'), 'x')
		const bounded = { ...OPTIONS, maxEntries: 2 }
		for (const key of [held, oldest, middle]) await cachedSnapshot(base, key, build, OPTIONS)
		// Last used: `held` longest ago, then `oldest`, then `middle`.
		for (const [index, key] of [held, oldest, middle].entries()) {
			const when = new Date(Date.now() - (3 - index) * 60_000)
			await utimes(join(cache(), key), when, when)
		}
		// A start reads `held` (its lock shared) while another key is built.
		let releaseStart: () => void = () => undefined
		const startRunning = new Promise<void>((resolve) => {
			releaseStart = resolve
		})
		let started = false
		const start = withCachedSnapshot(
			base,
			held,
			() => Promise.reject(new Error('no build')),
			async (found) => {
				started = true
				await startRunning
				return found.dir
			},
			OPTIONS,
		)
		await waitFor(() => started)
		// `held` keeps its old use time, so only its lock protects it.
		const old = new Date(Date.now() - 10 * 60_000)
		await utimes(join(cache(), held), old, old)
		const built = await cachedSnapshot(base, fresh, build, bounded)
		expect(built.built).toBe(true)
		// Four entries, a bound of 2, `held` in use: `oldest` and `middle` go.
		expect((await entries()).sort()).toEqual([held, fresh].sort())
		releaseStart()
		expect(await start).toBe(join(cache(), held))
		// Free again, `held` is the least recently used entry the next build evicts.
		await utimes(join(cache(), held), old, old)
		await cachedSnapshot(base, oldest, build, bounded)
		expect((await entries()).sort()).toEqual([fresh, oldest].sort())
	})
})
