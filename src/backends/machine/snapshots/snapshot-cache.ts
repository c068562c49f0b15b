/**
 * Warm-start snapshots a provider keeps in its state directory (`namzu-snapshot-cache/<key>/`):
 * the saved state of a booted, agent-ready guest, under a key naming everything that makes it
 * valid (the tier computes it), from which new sandboxes start instead of booting. Tier-neutral:
 * this file knows directories, not VMMs.
 *
 * - An entry appears whole or not at all: it is built in `.partial-<pid>-<start time>-<random>`
 *   and renamed into place.
 * - One build per key at a time: in one process concurrent requests share a build; across
 *   processes the builder holds `.lock-<key>` (`file-lock.ts`, dropped by the kernel when its
 *   process dies, so a SIGKILLed builder's lock is taken over at once) and another process waits
 *   for it, bounded and abortable, then finds the entry. Past the bound it builds too and the
 *   first rename wins, as it would without the lock.
 * - A start holds its key's lock shared while it reads the entry, so neither an eviction nor a
 *   discard (which take it exclusively, without waiting to evict) removes an entry in use.
 * - At most `maxEntries`: after a build, the least recently used entries beyond it are evicted
 *   (`snapshot-eviction.ts`).
 * - A key part that changes is a different key: a stale entry is never found, only left unused.
 * - The reaper (`reap-leftovers.ts`) removes partial directories whose builder is gone and entries
 *   unused (not started from) for `SNAPSHOT_IDLE_MS`.
 */
import { randomBytes } from 'node:crypto'
import { lstat, mkdir, readdir, rename, rm, stat, utimes } from 'node:fs/promises'
import { join } from 'node:path'
import { type FileLockHold, takeFileLock } from '../claims/file-lock.js'
import { isProcessAlive, readProcessIdentity } from '../claims/process-identity.js'
import { partialIsAbandoned } from '../claims/reap-decision.js'
import { decideSnapshotEvictions, type SnapshotEntryFact } from './snapshot-eviction.js'
import { PARTIAL_PREFIX, snapshotCacheDir } from './snapshot-layout.js'

/** An entry nothing started from for this long is reaped (a week: the cache is for reuse). */
export const SNAPSHOT_IDLE_MS = 7 * 24 * 60 * 60_000
/** How long a discard of a damaged entry waits for the starts reading it. */
const DISCARD_WAIT_MS = 60_000
/** Starts of one key after which an entry that keeps vanishing under a start is used as found. */
const START_ATTEMPTS = 3
const KEY_PATTERN = /^[0-9a-f]{32}$/
const PARTIAL_NAME = /^\.partial-(\d+)-(\d+)-[0-9a-f]{8}$/
const LOCK_PREFIX = '.lock-'

/** A usable entry: its directory, and whether this request built it. */
export interface CachedSnapshot {
	readonly dir: string
	readonly built: boolean
}

/** Builds one entry's content into `dir` (empty, private); a throw discards it. */
export type SnapshotBuilder = (dir: string, signal?: AbortSignal) => Promise<void>

/** How a request for an entry waits and what the cache keeps. */
export interface SnapshotCacheOptions {
	/** How long to wait for another process's build of the key before building too. */
	readonly buildWaitMs: number
	/** Entries kept: a build evicts the least recently used beyond this (none in use). */
	readonly maxEntries: number
	readonly signal?: AbortSignal
}

const building = new Map<string, Promise<CachedSnapshot>>()

function entryDir(stateBase: string, key: string): string {
	if (!KEY_PATTERN.test(key)) throw new Error(`not a snapshot cache key: ${key}`)
	return join(snapshotCacheDir(stateBase), key)
}

function lockPathOf(stateBase: string, key: string): string {
	return join(snapshotCacheDir(stateBase), `${LOCK_PREFIX}${key}`)
}

/** The entry of `key` when it exists, marked used now (the reaper's idle clock, eviction's order). */
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

/** Under the key's lock (or past waiting for it): the entry found, or built and published. */
async function buildUnderLock(
	stateBase: string,
	key: string,
	build: SnapshotBuilder,
	options: SnapshotCacheOptions,
): Promise<CachedSnapshot> {
	const { signal } = options
	await mkdir(snapshotCacheDir(stateBase), { recursive: true, mode: 0o700 })
	const hold = await takeFileLock(lockPathOf(stateBase, key), {
		waitMs: options.buildWaitMs,
		...(signal ? { signal } : {}),
	})
	try {
		// Another process's build finished while this one waited.
		const found = await findCachedSnapshot(stateBase, key)
		if (found !== undefined) return { dir: found, built: false }
		const entry = await buildAndPublish(stateBase, key, build, signal)
		if (entry.built) await evictSnapshots(stateBase, options.maxEntries, key)
		return entry
	} finally {
		await hold?.release()
	}
}

/**
 * The entry of `key`, built with `build` when there is none: one build per key per process at a
 * time (the first caller's, under its signal; a caller that waited on a build another's abort
 * ended builds again), another process's build waited for under the key's lock.
 */
export async function cachedSnapshot(
	stateBase: string,
	key: string,
	build: SnapshotBuilder,
	options: SnapshotCacheOptions,
): Promise<CachedSnapshot> {
	const flightKey = `${stateBase}\0${key}`
	for (;;) {
		options.signal?.throwIfAborted()
		const found = await findCachedSnapshot(stateBase, key)
		if (found !== undefined) return { dir: found, built: false }
		const inFlight = building.get(flightKey)
		if (inFlight === undefined) break
		const shared = await inFlight.catch(() => undefined)
		if (shared !== undefined) return { dir: shared.dir, built: false }
	}
	const flight = buildUnderLock(stateBase, key, build, options)
	building.set(flightKey, flight)
	try {
		return await flight
	} finally {
		if (building.get(flightKey) === flight) building.delete(flightKey)
	}
}

/**
 * The entry of `key` (built when there is none) held for `use`: its key's lock is held shared
 * meanwhile, so no eviction or discard removes it under the start reading it.
 */
export async function withCachedSnapshot<T>(
	stateBase: string,
	key: string,
	build: SnapshotBuilder,
	use: (entry: CachedSnapshot) => Promise<T>,
	options: SnapshotCacheOptions,
): Promise<T> {
	let built = false
	for (let attempt = 1; ; attempt += 1) {
		const entry = await cachedSnapshot(stateBase, key, build, options)
		built ||= entry.built
		const hold = await takeFileLock(lockPathOf(stateBase, key), {
			mode: 'shared',
			waitMs: options.buildWaitMs,
			...(options.signal ? { signal: options.signal } : {}),
		})
		try {
			const present = await lstat(entry.dir).then(
				() => true,
				() => false,
			)
			// Evicted or discarded between finding and holding it: find (or build) it again.
			if (present || attempt >= START_ATTEMPTS) return await use({ dir: entry.dir, built })
		} finally {
			await hold?.release()
		}
	}
}

/** Removes `dir` (an entry of `stateBase`): renamed away first, so no start finds it half deleted. */
async function removeEntry(stateBase: string, dir: string): Promise<void> {
	const doomed = `${snapshotCacheDir(stateBase)}/${PARTIAL_PREFIX}0-0-${randomBytes(4).toString('hex')}`
	await rename(dir, doomed).then(
		() => rm(doomed, { recursive: true, force: true }),
		() => undefined,
	)
}

/**
 * Removes an entry that failed to start a guest (it may be damaged); a later start rebuilds it.
 * Waits (bounded) for the starts reading it; past that it is left for the next failure.
 */
export async function discardCachedSnapshot(stateBase: string, key: string): Promise<void> {
	const dir = entryDir(stateBase, key)
	const hold = await takeFileLock(lockPathOf(stateBase, key), { waitMs: DISCARD_WAIT_MS }).catch(
		() => undefined,
	)
	if (hold === undefined) return
	try {
		await removeEntry(stateBase, dir)
	} finally {
		await hold.release()
	}
}

/** Each entry's key, last use, and the lock taken (without waiting) when no start or build holds it. */
async function entryFacts(
	stateBase: string,
	skip: string,
): Promise<{ facts: SnapshotEntryFact[]; holds: Map<string, FileLockHold> }> {
	const facts: SnapshotEntryFact[] = []
	const holds = new Map<string, FileLockHold>()
	for (const name of await readdir(snapshotCacheDir(stateBase)).catch(() => [] as string[])) {
		if (!KEY_PATTERN.test(name)) continue
		const info = await stat(join(snapshotCacheDir(stateBase), name)).catch(() => undefined)
		if (info?.isDirectory() !== true) continue
		const hold =
			name === skip
				? undefined
				: await takeFileLock(lockPathOf(stateBase, name), { waitMs: 0 }).catch(() => undefined)
		if (hold) holds.set(name, hold)
		facts.push({ key: name, usedAtMs: info.mtimeMs, inUse: hold === undefined })
	}
	return { facts, holds }
}

/**
 * Evicts the least recently used entries beyond `maxEntries`, never `keep` (held by the caller)
 * nor one a start or build holds; resolves the keys evicted.
 */
export async function evictSnapshots(
	stateBase: string,
	maxEntries: number,
	keep: string,
): Promise<string[]> {
	const { facts, holds } = await entryFacts(stateBase, keep)
	try {
		const evict = decideSnapshotEvictions(facts, maxEntries)
		for (const key of evict) await removeEntry(stateBase, entryDir(stateBase, key))
		return evict
	} finally {
		await Promise.all([...holds.values()].map((hold) => hold.release()))
	}
}

/** What a state directory's cache holds: its place, entries and their bytes (for `doctor`). */
export interface SnapshotCacheUsage {
	readonly dir: string
	readonly entries: number
	readonly bytes: number
}

async function treeBytes(path: string): Promise<number> {
	const info = await lstat(path).catch(() => undefined)
	if (info === undefined) return 0
	if (!info.isDirectory()) return info.blocks * 512
	let total = 0
	for (const name of await readdir(path).catch(() => [] as string[])) {
		total += await treeBytes(join(path, name))
	}
	return total
}

/** The cache's entries and the disk they take (allocated blocks: the files are sparse). */
export async function snapshotCacheUsage(stateBase: string): Promise<SnapshotCacheUsage> {
	const dir = snapshotCacheDir(stateBase)
	let entries = 0
	let bytes = 0
	for (const name of await readdir(dir).catch(() => [] as string[])) {
		if (!KEY_PATTERN.test(name)) continue
		entries += 1
		bytes += await treeBytes(join(dir, name))
	}
	return { dir, entries, bytes }
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
			const writerAlive =
				pid === '0' ? undefined : isProcessAlive({ pid: Number(pid), startTime: startTime ?? '' })
			stale = partialIsAbandoned({ writerAlive, ageMs: nowMs - info.mtimeMs })
		} else {
			stale = KEY_PATTERN.test(name) && nowMs - info.mtimeMs >= SNAPSHOT_IDLE_MS
		}
		if (!stale) continue
		if (!dryRun) await rm(path, { recursive: true, force: true })
		removed.push(path)
	}
	return removed
}
