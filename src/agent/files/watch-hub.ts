/**
 * The agent's watchers, one per (path, recursive), shared by every connection watching it. A
 * watcher whose last reader left keeps watching for `WATCH_RETENTION_MS`, so a host that lost its
 * connection resumes from its cursor without a gap; then it is closed. At most `MAX_WATCHERS`.
 */
import { lstatSync } from 'node:fs'
import { MAX_WATCHERS, WATCH_RETENTION_MS } from '../../wire/file-verbs.js'
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { errnoCode, fsRefusal } from './fs-refusal.js'
import { PathWatcher } from './path-watcher.js'

interface Held {
	readonly watcher: PathWatcher
	linger: NodeJS.Timeout | undefined
}

const held = new Map<string, Held>()

function keyOf(path: string, recursive: boolean): string {
	return `${recursive ? 'r' : 'n'}:${path}`
}

/** The watcher of `path` (made when none is held); the caller `release`s it when done. */
export function acquireWatcher(path: string, recursive: boolean): PathWatcher {
	const key = keyOf(path, recursive)
	const existing = held.get(key)
	if (existing !== undefined && existing.watcher.failure === undefined) {
		if (existing.linger !== undefined) clearTimeout(existing.linger)
		existing.linger = undefined
		return existing.watcher
	}
	if (existing !== undefined) {
		existing.watcher.close()
		held.delete(key)
	}
	if (held.size >= MAX_WATCHERS) {
		throw new OpRefusal(formatRefusal(AGENT_REFUSAL.watch_capacity, `${MAX_WATCHERS} watchers`))
	}
	let watcher: PathWatcher
	try {
		watcher = new PathWatcher(path, recursive, lstatSync(path).isDirectory())
	} catch (error) {
		const code = errnoCode(error)
		if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EACCES') throw fsRefusal(error)
		const message = error instanceof Error ? error.message : String(error)
		throw new OpRefusal(formatRefusal(AGENT_REFUSAL.watch_failed, message))
	}
	held.set(key, { watcher, linger: undefined })
	return watcher
}

/** Called once a reader left: the watcher lingers for the retention window when it has none. */
export function releaseWatcher(watcher: PathWatcher, recursive: boolean): void {
	const key = keyOf(watcher.path, recursive)
	const entry = held.get(key)
	if (entry === undefined || entry.watcher !== watcher) {
		if (watcher.readerCount === 0) watcher.close()
		return
	}
	if (watcher.readerCount > 0) return
	if (entry.linger !== undefined) clearTimeout(entry.linger)
	entry.linger = setTimeout(() => {
		if (watcher.readerCount > 0) return
		watcher.close()
		held.delete(key)
	}, WATCH_RETENTION_MS)
	entry.linger.unref()
}
