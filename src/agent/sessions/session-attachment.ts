/**
 * One connection attached to a session: `ready` with the session's fields, the replay from the
 * requested offset, then live output — every `data` event carrying its `offset`/`nextOffset` in the
 * session's byte space — and finally `exit` (then the terminator) once the program exited and the
 * reader has everything. Client frames `input`, `resize`, `kill` reach the program; `heartbeat`
 * is accepted and ignored.
 *
 * Flow control never reaches the program: the ring keeps draining it. The attachment only keeps a
 * cursor; when the socket is full it stops writing and, on `drain`, catches up from the ring. A
 * reader whose cursor the ring has evicted (more than one log behind) is detached as
 * `slow_reader`; a newer attachment ends this one as `superseded`. A detach never signals the
 * program; a closed connection just releases the session.
 */
import type { WireSessionDetachReason } from '../../wire/sessions.js'
import type { OpContext } from '../handler/op-context.js'
import { sendStreamReady } from '../handler/stream-heartbeat.js'
import { guestBootId } from '../lifecycle/guest-boot-id.js'
import type { OutputEntry, OutputStream } from '../process/output-log.js'
import {
	handleTerminalClientFrame,
	type TerminalFrameTarget,
} from '../process/terminal-client-frame.js'
import type { TerminalSize } from '../process/terminal-request.js'
import type { Session, SessionObserver } from './session.js'

/** Consecutive same-stream ring entries are sent as one `data` event up to this many bytes. */
export const SESSION_DATA_FRAME_BYTES = 64 * 1024

interface DataRun {
	readonly stream: OutputStream
	readonly offset: number
	readonly data: Buffer
}

/** Groups consecutive entries of one stream into runs of at most `maxBytes` (pure). */
export function coalesceEntries(
	entries: readonly OutputEntry[],
	maxBytes = SESSION_DATA_FRAME_BYTES,
): DataRun[] {
	const runs: DataRun[] = []
	let pending: OutputEntry[] = []
	let pendingBytes = 0
	const flush = () => {
		const [first] = pending
		if (!first) return
		runs.push({
			stream: first.stream,
			offset: first.offset,
			data: pending.length === 1 ? first.data : Buffer.concat(pending.map((entry) => entry.data)),
		})
		pending = []
		pendingBytes = 0
	}
	for (const entry of entries) {
		const [first] = pending
		if (first && (first.stream !== entry.stream || pendingBytes + entry.data.length > maxBytes)) {
			flush()
		}
		pending.push(entry)
		pendingBytes += entry.data.length
	}
	flush()
	return runs
}

export class SessionAttachment implements SessionObserver {
	readonly #ctx: OpContext
	readonly #session: Session
	readonly #flushGraceMs: number
	#cursor = 0
	#paused = false
	#done = false

	constructor(ctx: OpContext, session: Session) {
		this.#ctx = ctx
		this.#session = session
		this.#flushGraceMs = ctx.config.refusalFlushGraceMs
	}

	/**
	 * Takes the session (a previous attachment is superseded), sends `ready`, replays from
	 * `fromOffset` (already validated against the ring) and follows live. Client frames are the
	 * op's to forward to `handle`.
	 */
	start(
		fromOffset: number | undefined,
		options: { readonly size?: TerminalSize; readonly body?: Record<string, unknown> } = {},
	): void {
		const { size } = options
		const session = this.#session
		const read = session.log.read(fromOffset)
		this.#cursor = read.fromOffset
		session.attach(this)
		if (size && session.kind === 'terminal') session.program?.resize(size)
		const summary = session.summary()
		// `ready` through the stream-heartbeat helper: a requested `heartbeatMs` is negotiated too.
		sendStreamReady(this.#ctx, options.body ?? {}, {
			guestBootId: guestBootId(),
			sessionId: summary.sessionId,
			kind: summary.kind,
			state: summary.state,
			...(summary.exitCode === undefined ? {} : { exitCode: summary.exitCode }),
			...(summary.signal === undefined ? {} : { signal: summary.signal }),
			fromOffset: read.fromOffset,
			droppedBytes: read.droppedBytes,
			nextOffset: read.nextOffset,
		})
		this.#ctx.onClose(() => {
			this.#done = true
			session.release(this)
		})
		this.#pump()
	}

	output(entry: OutputEntry): void {
		if (this.#done) return
		if (this.#paused) {
			if (this.#session.log.startOffset > this.#cursor) this.detach('slow_reader')
			return
		}
		if (entry.offset === this.#cursor) this.#sendRun(entry)
		else this.#pump()
	}

	exited(): void {
		if (this.#done || this.#paused) return
		this.#pump()
	}

	detach(reason: WireSessionDetachReason): void {
		if (this.#done) return
		this.#done = true
		this.#session.release(this)
		this.#ctx.send({ type: 'detached', reason, nextOffset: this.#cursor })
		this.#ctx.endStream()
		// A stalled reader may never take the last frames: do not hold its socket forever.
		const socket = this.#ctx.socket
		setTimeout(() => {
			if (!socket.destroyed) socket.destroy()
		}, this.#flushGraceMs).unref()
	}

	/** Sends everything between the cursor and the ring's end, then `exit` if the program ended. */
	#pump(): void {
		if (this.#done || this.#paused) return
		const log = this.#session.log
		if (this.#cursor < log.nextOffset) {
			const read = log.read(this.#cursor)
			if (read.droppedBytes > 0) {
				this.detach('slow_reader')
				return
			}
			for (const run of coalesceEntries(read.entries)) {
				if (!this.#sendRun(run)) return
			}
		}
		if (this.#session.state === 'exited' && this.#cursor >= log.nextOffset) this.#sendExit()
	}

	/** One `data` event; false (and paused until `drain`) when the socket is full. */
	#sendRun(run: DataRun): boolean {
		const nextOffset = run.offset + run.data.length
		this.#cursor = nextOffset
		const accepted = this.#ctx.send({
			type: 'data',
			data: run.data.toString('utf8'),
			stream: run.stream,
			offset: run.offset,
			nextOffset,
		})
		if (accepted || this.#ctx.closed) return true
		this.#paused = true
		this.#ctx.socket.once('drain', () => {
			this.#paused = false
			this.#pump()
		})
		return false
	}

	#sendExit(): void {
		const session = this.#session
		this.#done = true
		session.release(this)
		const signal = session.signalNumber
		this.#ctx.send({
			type: 'exit',
			exitCode: session.exitCode ?? -1,
			...(signal === undefined ? {} : { signal }),
			nextOffset: this.#cursor,
		})
		this.#ctx.endStream()
	}

	/** A client frame (the op registers the connection's frame listener and forwards here). */
	handle(message: Record<string, unknown>): void {
		if (this.#done) return
		handleTerminalClientFrame(message, this.#frameTarget, this.#ctx.socket)
	}

	readonly #frameTarget: TerminalFrameTarget = {
		input: (data) => {
			if (this.#session.state === 'exited') return true
			// Without a program there is no drain to wait for, so the connection keeps being read.
			return this.#session.input(data) || this.#session.program === undefined
		},
		onInputDrain: (resume) => this.#session.program?.onInputDrain(resume),
		resize: (size) => this.#session.program?.resize(size),
		kill: (signal) => {
			this.#session.kill(signal)
		},
	}
}
