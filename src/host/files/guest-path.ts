/**
 * How a path the guest answers is shown to a caller: relative to the workspace root when it lies
 * inside it (so it reads the same on every tier and goes straight back into any file verb),
 * otherwise the guest-absolute path the workload sees. Never a host path: a tier whose guest sees
 * the workspace at a host path (the local tier) still shows it relative. Every result that carries
 * a guest path (file verbs, watch, `listFiles`, `walkFiles`) goes through here.
 */
import { posix } from 'node:path'
import type { SandboxFileEntry } from '../../contract/sandbox.js'

export function shownGuestPath(rootDir: string, guestPath: string): string {
	const root = rootDir.length > 1 && rootDir.endsWith('/') ? rootDir.slice(0, -1) : rootDir
	if (guestPath === root) return '.'
	const relative = posix.relative(root, guestPath)
	if (relative === '' || relative.startsWith('../') || relative === '..') return guestPath
	if (posix.isAbsolute(relative)) return guestPath
	return relative
}

/** A `listFiles` / `walkFiles` entry with its path shown as the guest's own. */
export function shownGuestEntry(rootDir: string, entry: SandboxFileEntry): SandboxFileEntry {
	return { ...entry, path: shownGuestPath(rootDir, entry.path) }
}

/** A listing with every path shown as the guest's own. */
export function shownGuestEntries(
	rootDir: string,
	entries: readonly SandboxFileEntry[],
): SandboxFileEntry[] {
	return entries.map((entry) => shownGuestEntry(rootDir, entry))
}

/** A lazy walk with every path shown as the guest's own; leaving early ends the walk under it. */
export async function* shownGuestWalk(
	rootDir: string,
	entries: AsyncIterable<SandboxFileEntry>,
): AsyncGenerator<SandboxFileEntry> {
	for await (const entry of entries) yield shownGuestEntry(rootDir, entry)
}
