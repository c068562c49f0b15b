/**
 * Which warm-start snapshots go when a cache holds more than its bound (pure): the least recently
 * used first, never one in use (a restore reading it, a build holding its key) — those count
 * toward the bound but are skipped, so a cache whose extra entries are all in use stays above it
 * until they are free.
 */

/** Default bound on a state directory's warm-start snapshots (each is a guest's RAM on disk). */
export const DEFAULT_SNAPSHOT_CACHE_MAX_ENTRIES = 4

export interface SnapshotEntryFact {
	readonly key: string
	/** When it was last started from or built (the entry directory's mtime). */
	readonly usedAtMs: number
	/** A restore or a build holds its key: never evicted now. */
	readonly inUse: boolean
}

/** The keys to evict so at most `maxEntries` remain, least recently used first. */
export function decideSnapshotEvictions(
	entries: readonly SnapshotEntryFact[],
	maxEntries: number,
): string[] {
	let excess = entries.length - Math.max(0, maxEntries)
	if (excess <= 0) return []
	const evict: string[] = []
	const oldestFirst = [...entries].sort(
		(a, b) => a.usedAtMs - b.usedAtMs || a.key.localeCompare(b.key),
	)
	for (const entry of oldestFirst) {
		if (excess === 0) break
		if (entry.inUse) continue
		evict.push(entry.key)
		excess -= 1
	}
	return evict
}
