/**
 * `watch-path`: `ready { cursor }`, then every change under the path as it happens (`change`), an
 * `overflow` when this reader lost changes (it fell a whole ring behind, or its cursor expired),
 * and `idle` after `WATCH_IDLE_EVENT_MS` of quiet; until the host closes the connection. A cursor
 * from an earlier connection resumes where it left off while the watcher is retained. The reader
 * holds no queue of its own: it replays from the watcher's ring after its last sent change, and
 * waits for `drain` between writes, so a slow host costs nothing but the ring.
 */
import { WATCH_IDLE_EVENT_MS } from '../../wire/file-verbs.js'
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import { resolveJailedPath } from '../files/jail.js'
import { invalidFileRequest, recursiveOf } from '../files/path-stat.js'
import type { PathWatcher, StoredChange } from '../files/path-watcher.js'
import { acquireWatcher, releaseWatcher } from '../files/watch-hub.js'
import type { OpContext, OpHandler } from '../handler/op-context.js'
import { waitForDrain } from '../handler/wait-for-drain.js'

const CURSOR = /^([0-9a-f]{12})\.(0|[1-9][0-9]{0,15})$/

/** Where a reader starts: after `seq`, told `overflow` first when its cursor cannot resume. */
function startOf(watcher: PathWatcher, cursor: unknown): { seq: number; lost: boolean } {
	if (cursor === undefined) return { seq: watcher.lastSeq, lost: false }
	const match = typeof cursor === 'string' ? CURSOR.exec(cursor) : null
	if (match === null) throw invalidFileRequest('cursor must be a cursor of an earlier event')
	const seq = Number(match[2])
	if (match[1] !== watcher.id || seq > watcher.lastSeq) return { seq: watcher.lastSeq, lost: true }
	return { seq, lost: watcher.changesAfter(seq) === undefined }
}

function changeEvent(watcher: PathWatcher, change: StoredChange): object {
	const { seq, ...rest } = change
	return { type: 'change', change: { ...rest, cursor: watcher.cursorOf(seq) } }
}

export const watchPath: OpHandler = (body, ctx) => {
	const recursive = recursiveOf(body)
	const jailed = resolveJailedPath(ctx.config, body.path, 'read')
	const watcher = acquireWatcher(jailed.path, recursive)
	let start: { seq: number; lost: boolean }
	try {
		start = startOf(watcher, body.cursor)
	} catch (error) {
		releaseWatcher(watcher, recursive)
		throw error
	}
	new WatchReaderPump(ctx, watcher, recursive, start.seq).begin(start.lost)
}

class WatchReaderPump {
	readonly #ctx: OpContext
	readonly #watcher: PathWatcher
	readonly #recursive: boolean
	#sent: number
	#pumping = false
	#quiet = true
	readonly #idle: NodeJS.Timeout

	constructor(ctx: OpContext, watcher: PathWatcher, recursive: boolean, seq: number) {
		this.#ctx = ctx
		this.#watcher = watcher
		this.#recursive = recursive
		this.#sent = seq
		this.#idle = setInterval(() => {
			if (this.#quiet && !this.#pumping) this.#ctx.send({ type: 'idle' })
			this.#quiet = true
		}, WATCH_IDLE_EVENT_MS)
	}

	begin(lost: boolean): void {
		const reader = { wake: () => this.#pump() }
		this.#watcher.add(reader)
		this.#ctx.onClose(() => {
			clearInterval(this.#idle)
			this.#watcher.remove(reader)
			releaseWatcher(this.#watcher, this.#recursive)
		})
		this.#ctx.send({ type: 'ready', cursor: this.#watcher.cursorOf(this.#sent) })
		if (lost) this.#overflow()
		this.#pump()
	}

	#overflow(): void {
		this.#sent = this.#watcher.lastSeq
		this.#ctx.send({ type: 'overflow', at: Date.now(), cursor: this.#watcher.cursorOf(this.#sent) })
	}

	#pump(): void {
		if (this.#pumping || this.#ctx.closed) return
		this.#pumping = true
		void this.#drainRing().finally(() => {
			this.#pumping = false
		})
	}

	async #drainRing(): Promise<void> {
		for (;;) {
			if (this.#ctx.closed) return
			const failure = this.#watcher.failure
			if (failure !== undefined) {
				this.#ctx.send({ type: 'error', error: formatRefusal(AGENT_REFUSAL.watch_failed, failure) })
				this.#ctx.endStream()
				return
			}
			const changes = this.#watcher.changesAfter(this.#sent)
			if (changes === undefined) {
				this.#overflow()
				continue
			}
			if (changes.length === 0) return
			for (const change of changes) {
				this.#quiet = false
				this.#sent = change.seq
				if (!this.#ctx.send(changeEvent(this.#watcher, change)) && !(await waitForDrain(this.#ctx)))
					return
			}
		}
	}
}
