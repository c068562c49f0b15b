/**
 * Warm-start snapshots a provider keeps in its state directory (`namzu-snapshot-cache/<key>/`):
 * the saved state of a booted, agent-ready guest, under a key naming everything that makes it
 * valid (the tier computes it), from which new sandboxes start instead of booting. Tier-neutral:
 * this file knows directories, not VMMs.
 *
 * - An entry appears whole or not at all: it is built in `.partial-<pid>-<start time>-<random>`
 *   and renamed into place. Two builders of one key (two providers, two processes) each build
 *   their own; the first rename wins, the other's copy is removed and the winner's used. In one
 *   process, concurrent requests for a key share one build.
 * - A key part that changes is a different key: a stale entry is never found, only left unused.
 * - The reaper (`reap-leftovers.ts`) removes partial directories whose builder is gone and entries
 *   unused (not started from) for `SNAPSHOT_IDLE_MS`.
 */
import { randomBytes } from 'node:crypto'
import { lstat, mkdir, readdir, rename, rm, stat, utimes } from 'node:fs/promises'
import { join } from 'node:path'
import { isProcessAlive, readProcessIdentity } from '../claims/process-identity.js'
import { UNRECORDED_GRACE_MS } from '../claims/reap-decision.js'
import { PARTIAL_PREFIX, snapshotCacheDir } from './snapshot-layout.js'

/** An entry nothing started from for this long is reaped (a week: the cache is for reuse). */
export const SNAPSHOT_IDLE_MS = 7 * 24 * 60 * 60_000
const KEY_PATTERN = /^[0-9a-f]{32}$/
const PARTIAL_NAME = /^\.partial-(\d+)-(\d+)-[0-9a-f]{8}$/

/** A usable entry: its directory, and whether this request built it. */
export interface CachedSnapshot {
	readonly dir: string
	readonly built: boolean
}

/** Builds one entry's content into `dir` (empty, private); a throw discards it. */
export type SnapshotBuilder = (dir: string, signal?: AbortSignal) => Promise<void>

const building = new Map<string, Promise<CachedSnapshot>>()

function entryDir(stateBase: string, key: string): string {
	if (!KEY_PATTERN.test(key)) throw new Error(`not a snapshot cache key: ${key}`)
	return join(snapshotCacheDir(stateBase), key)
}

/** The entry of `key` when it exists, marked used now (the reaper's idle clock). */
export async function findCachedSnapshot(
	stateBase: string,
	key: string,
): Promise<string | undefined> {
	const dir = entryDir(stateBase, key)
	const info = await lstat(dir).catch(() => undefined)
	if (info?.isDirectory() !== true) return undefined
	const now = new Date()
	await utimes(dir, now, now).catch(() => undefined)
	return dir
}

async function buildAndPublish(
	stateBase: string,
	key: string,
	build: SnapshotBuilder,
	signal: AbortSignal | undefined,
): Promise<CachedSnapshot> {
	const cache = snapshotCacheDir(stateBase)
	await mkdir(cache, { recursive: true, mode: 0o700 })
	const self = await readProcessIdentity(process.pid)
	const nonce = randomBytes(4).toString('hex')
	const partial = join(cache, `${PARTIAL_PREFIX}${process.pid}-${self?.startTime ?? 0}-${nonce}`)
	await mkdir(partial, { mode: 0o700 })
	const dir = entryDir(stateBase, key)
	try {
		await build(partial, signal)
		signal?.throwIfAborted()
		try {
			await rename(partial, dir)
			return { dir, built: true }
		} catch (error) {
			const code = (error as NodeJS.ErrnoException).code
			if (code !== 'EEXIST' && code !== 'ENOTEMPTY') throw error
			// Another builder published this key first: its entry is as good as ours.
			return { dir, built: false }
		}
	} finally {
		await rm(partial, { recursive: true, force: true })
	}
}

/**
 * The entry of `key`, built with `build` when there is none: one build per key per process at a
 * time (the first caller's, under its signal; a caller that waited on a build another's abort
 * ended builds again), another process's concurrent build resolved by the rename.
 */
export async function cachedSnapshot(
	stateBase: string,
	key: string,
	build: SnapshotBuilder,
	signal?: AbortSignal,
): Promise<CachedSnapshot> {
	const flightKey = `${stateBase}\0${key}`
	for (;;) {
		signal?.throwIfAborted()
		const found = await findCachedSnapshot(stateBase, key)
		if (found !== undefined) return { dir: found, built: false }
		const inFlight = building.get(flightKey)
		if (inFlight === undefined) break
		const shared = await inFlight.catch(() => undefined)
		if (shared !== undefined) return { dir: shared.dir, built: false }
	}
	const flight = buildAndPublish(stateBase, key, build, signal)
	building.set(flightKey, flight)
	try {
		return await flight
	} finally {
		if (building.get(flightKey) === flight) building.delete(flightKey)
	}
}

/** Removes an entry that failed to start a guest (it may be damaged); a later start rebuilds it. */
export async function discardCachedSnapshot(stateBase: string, key: string): Promise<void> {
	const dir = entryDir(stateBase, key)
	const doomed = `${snapshotCacheDir(stateBase)}/${PARTIAL_PREFIX}0-0-${randomBytes(4).toString('hex')}`
	// Renamed away first, so no new start finds it half deleted.
	await rename(dir, doomed).then(
		() => rm(doomed, { recursive: true, force: true }),
		() => undefined,
	)
}

/**
 * Removes (with `dryRun`, only names) partial directories whose builder is gone (a doomed entry's
 * names none: once older than `UNRECORDED_GRACE_MS`) and entries unused for `SNAPSHOT_IDLE_MS`.
 */
export async function staleCachedSnapshots(
	stateBase: string,
	nowMs: number,
	dryRun: boolean,
): Promise<string[]> {
	const cache = snapshotCacheDir(stateBase)
	const removed: string[] = []
	for (const name of await readdir(cache).catch(() => [] as string[])) {
		const path = join(cache, name)
		const info = await stat(path).catch(() => undefined)
		if (info?.isDirectory() !== true || info.uid !== (process.getuid?.() ?? 0)) continue
		const partial = PARTIAL_NAME.exec(name)
		let stale: boolean
		if (partial) {
			const [, pid, startTime] = partial
			stale =
				pid === '0'
					? nowMs - info.mtimeMs >= UNRECORDED_GRACE_MS
					: !isProcessAlive({ pid: Number(pid), startTime: startTime ?? '' })
		} else {
			stale = KEY_PATTERN.test(name) && nowMs - info.mtimeMs >= SNAPSHOT_IDLE_MS
		}
		if (!stale) continue
		if (!dryRun) await rm(path, { recursive: true, force: true })
		removed.push(path)
	}
	return removed
}
