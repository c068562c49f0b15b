/**
 * One watched path: Node's `fs.watch` (inotify; `recursive` on Linux since Node 20) turned into
 * `create` / `modify` / `delete` / `rename` changes kept in a bounded ring with a sequence number,
 * so readers that fall behind or reconnect with a cursor replay what they missed, and a reader
 * further behind than the ring is told `overflow` instead of growing anything.
 *
 * inotify reports a move as two names; a name that vanished is held `MOVE_PAIR_MS` so the name that
 * appears with the same inode becomes one `rename` (either order). The agent's own write temp files
 * are hidden: a write shows as `create` or `modify` of its target.
 */
import { type FSWatcher, lstatSync, watch } from 'node:fs'
import { basename, join } from 'node:path'
import { WATCH_QUEUE_EVENTS, type WireWatchChangeType } from '../../wire/file-verbs.js'
import { agentRandom } from '../lifecycle/agent-random.js'
import { isTempFileName } from './temp-sibling.js'

/** How long a vanished name waits for its new name before it is reported deleted. */
const MOVE_PAIR_MS = 50
/** Inodes remembered for pairing moves (oldest forgotten first). */
const MAX_REMEMBERED_INODES = 8192

export interface StoredChange {
	readonly seq: number
	readonly type: WireWatchChangeType
	readonly path: string
	readonly fromPath?: string
	readonly at: number
}

/** A reader of a watcher: woken (synchronously) after each change, and when the watcher fails. */
export interface WatchReader {
	wake(): void
}

export class PathWatcher {
	/** Distinguishes this watcher's cursors from those of one that watched the same path before. */
	readonly id = agentRandom.bytes(6).toString('hex')
	readonly path: string
	readonly #ring: StoredChange[] = []
	#nextSeq = 1
	readonly #readers = new Set<WatchReader>()
	readonly #inodes = new Map<string, number>()
	readonly #vanishing = new Map<string, { ino: number; timer: NodeJS.Timeout }>()
	/** Old names already reported as the source of a `rename`. */
	readonly #movedAway = new Set<string>()
	readonly #fs: FSWatcher
	readonly #isDirectory: boolean
	#failure: string | undefined

	/** Throws what `fs.watch` throws (ENOENT, ENOSPC, …). */
	constructor(path: string, recursive: boolean, isDirectory: boolean) {
		this.path = path
		this.#isDirectory = isDirectory
		this.#fs = watch(path, { recursive, persistent: false }, (eventType, name) =>
			this.#observe(eventType, typeof name === 'string' ? name : ''),
		)
		this.#fs.on('error', (error) => {
			this.#failure = error.message
			this.#wakeAll()
		})
	}

	/** Why the watch stopped, once it did. */
	get failure(): string | undefined {
		return this.#failure
	}

	get lastSeq(): number {
		return this.#nextSeq - 1
	}

	cursorOf(seq: number): string {
		return `${this.id}.${seq}`
	}

	/** The changes after `seq`, or `undefined` when some of them already left the ring. */
	changesAfter(seq: number): readonly StoredChange[] | undefined {
		const first = this.#ring[0]?.seq ?? this.#nextSeq
		if (seq < first - 1) return undefined
		return this.#ring.slice(seq - first + 1)
	}

	add(reader: WatchReader): void {
		this.#readers.add(reader)
	}

	remove(reader: WatchReader): void {
		this.#readers.delete(reader)
	}

	get readerCount(): number {
		return this.#readers.size
	}

	close(): void {
		this.#fs.close()
		for (const pending of this.#vanishing.values()) clearTimeout(pending.timer)
		this.#vanishing.clear()
	}

	#observe(eventType: string, name: string): void {
		const path = this.#isDirectory && name !== '' ? join(this.path, name) : this.path
		let ino: number | undefined
		try {
			ino = lstatSync(path).ino
		} catch {
			ino = undefined
		}
		if (ino === undefined) this.#vanished(path)
		else this.#present(path, ino, eventType === 'change')
	}

	#vanished(path: string): void {
		if (this.#movedAway.delete(path) || this.#vanishing.has(path)) return
		const ino = this.#inodes.get(path)
		this.#inodes.delete(path)
		if (ino === undefined) {
			this.#push('delete', path)
			return
		}
		const timer = setTimeout(() => {
			this.#vanishing.delete(path)
			this.#push('delete', path)
		}, MOVE_PAIR_MS)
		timer.unref()
		this.#vanishing.set(path, { ino, timer })
	}

	#present(path: string, ino: number, changed: boolean): void {
		const known = this.#inodes.get(path) === ino
		this.#remember(path, ino)
		if (changed || known) {
			this.#push('modify', path)
			return
		}
		const from = this.#sourceOf(path, ino)
		if (from === undefined) this.#push('create', path)
		// A write's temp file renamed onto its target: the target was written.
		else if (isTempFileName(basename(from))) this.#push('create', path)
		else this.#push('rename', path, from)
	}

	/** The old name of a move to `path`: a vanishing or vanished name with the same inode. */
	#sourceOf(path: string, ino: number): string | undefined {
		for (const [old, pending] of this.#vanishing) {
			if (pending.ino !== ino) continue
			clearTimeout(pending.timer)
			this.#vanishing.delete(old)
			return old
		}
		for (const [old, known] of this.#inodes) {
			if (known !== ino || old === path || exists(old)) continue
			this.#inodes.delete(old)
			this.#movedAway.add(old)
			if (this.#movedAway.size > MAX_REMEMBERED_INODES) this.#movedAway.clear()
			return old
		}
		return undefined
	}

	#remember(path: string, ino: number): void {
		this.#inodes.delete(path)
		this.#inodes.set(path, ino)
		if (this.#inodes.size <= MAX_REMEMBERED_INODES) return
		const oldest = this.#inodes.keys().next().value
		if (oldest !== undefined) this.#inodes.delete(oldest)
	}

	#push(type: WireWatchChangeType, path: string, fromPath?: string): void {
		if (isTempFileName(basename(path))) return
		const change: StoredChange = {
			seq: this.#nextSeq,
			type,
			path,
			...(fromPath === undefined ? {} : { fromPath }),
			at: Date.now(),
		}
		this.#nextSeq += 1
		this.#ring.push(change)
		if (this.#ring.length > WATCH_QUEUE_EVENTS) this.#ring.shift()
		this.#wakeAll()
	}

	#wakeAll(): void {
		for (const reader of this.#readers) reader.wake()
	}
}

function exists(path: string): boolean {
	try {
		lstatSync(path)
		return true
	} catch {
		return false
	}
}
