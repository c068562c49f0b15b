/**
 * A session terminal: one attachment to a guest session (a persistent terminal, or a detached
 * program followed through `attach-session`) that answered `ready`. Input, resize and kill go out
 * as client frames; `data` reaches `onData` and advances `nextOffset` (the byte offset to resume
 * at). `exited` resolves only with the program's real exit. When the attachment ends and the
 * program has not — the connection was lost, another attach superseded this one, the guest cut a
 * slow reader, or the owner detached — `exited` REJECTS with `AgentSessionDetachedError` carrying
 * `nextOffset`: resolving would report an exit that never happened. A connection lost because the
 * guest itself died (`GuestLiveness`) rejects with that `GuestDiedError` instead: the program died
 * with it. Detaching never signals.
 */
import type { TerminalExit, TerminalSession, TerminalSize } from '../../contract/sandbox.js'
import type { SessionKind, SessionState } from '../../wire/sessions.js'
import { terminalSignal } from '../transport/agent-terminal-session.js'
import type { FrameChannel } from '../transport/frame-channel.js'
import type { GuestLiveness } from '../transport/guest-liveness.js'
import { ListenerSet } from '../transport/listener-set.js'
import { AgentSessionDetachedError, type SessionDetachReason } from './session-errors.js'

/** A terminal attached to a guest session: detaching leaves the program running. */
export interface SessionTerminal extends TerminalSession {
	readonly sessionId: string
	readonly kind: SessionKind
	/** The session's state when this attachment began. */
	readonly initialState: SessionState
	/** Where the replay started (past the requested offset when the ring had evicted bytes). */
	readonly fromOffset: number
	/** Bytes between the requested offset and `fromOffset` this reader will never see. */
	readonly droppedBytes: number
	/** Offset after the last byte received: where a later `attachTerminal` should resume. */
	readonly nextOffset: number
	/** Ends this attachment and leaves the program running; `exited` rejects as `closed`. */
	detach(): Promise<void>
}

function numberField(message: Record<string, unknown>, key: string, fallback: number): number {
	const value = message[key]
	return typeof value === 'number' && Number.isFinite(value) ? value : fallback
}

export class AgentSessionTerminal implements SessionTerminal {
	readonly sessionId: string
	readonly kind: SessionKind
	readonly initialState: SessionState
	readonly fromOffset: number
	readonly droppedBytes: number
	readonly exited: Promise<TerminalExit>
	readonly #channel: FrameChannel
	readonly #data = new ListenerSet<string>((chunk) => chunk.length)
	#nextOffset: number
	#settled = false
	#detaching = false
	#resolveExit: (exit: TerminalExit) => void = () => {}
	#rejectExit: (error: Error) => void = () => {}
	readonly #liveness: GuestLiveness | undefined

	/** `ready` is the guest's ready event for this attachment (session fields included). */
	constructor(
		channel: FrameChannel,
		ready: Record<string, unknown>,
		sessionId: string,
		liveness?: GuestLiveness,
	) {
		this.#channel = channel
		this.#liveness = liveness
		this.sessionId = typeof ready.sessionId === 'string' ? ready.sessionId : sessionId
		this.kind = ready.kind === 'detached' ? 'detached' : 'terminal'
		this.initialState = ready.state === 'exited' ? 'exited' : 'running'
		this.fromOffset = numberField(ready, 'fromOffset', 0)
		this.droppedBytes = numberField(ready, 'droppedBytes', 0)
		this.#nextOffset = this.fromOffset
		this.exited = new Promise((resolve, reject) => {
			this.#resolveExit = resolve
			this.#rejectExit = reject
		})
		// A caller that never looks at `exited` must not see an unhandled rejection.
		this.exited.catch(() => undefined)
		void this.#pump()
	}

	get nextOffset(): number {
		return this.#nextOffset
	}

	write(data: string): void {
		if (this.#settled) return
		this.#channel.send({ type: 'input', data })
	}

	resize(size: TerminalSize): void {
		if (this.#settled) return
		this.#channel.send({ type: 'resize', cols: size.cols, rows: size.rows })
	}

	onData(listener: (chunk: string) => void): () => void {
		return this.#data.subscribe(listener)
	}

	/** Signals the session's program and everything in its kernel session (guest allow-list). */
	kill(signal?: string): void {
		if (this.#settled) return
		this.#channel.send({ type: 'kill', signal: terminalSignal(signal) })
	}

	async detach(): Promise<void> {
		if (!this.#settled) this.#detaching = true
		this.#channel.destroy()
		await this.#channel.closed
		this.#detached('closed')
	}

	/** The sandbox's teardown of what it handed out: a detach (the guest owns the program). */
	close(): Promise<void> {
		return this.detach()
	}

	#detached(reason: SessionDetachReason, nextOffset = this.#nextOffset): void {
		if (this.#settled) return
		this.#settled = true
		this.#rejectExit(new AgentSessionDetachedError(this.sessionId, reason, nextOffset))
	}

	async #pump(): Promise<void> {
		for (;;) {
			const item = await this.#channel.read()
			if (item.kind === 'closed') {
				const lost = !this.#detaching && !this.#settled
				const died = lost ? await this.#liveness?.explain() : undefined
				if (died && !this.#settled) {
					this.#settled = true
					this.#rejectExit(died)
				}
				this.#detached(this.#detaching ? 'closed' : 'connection-lost')
				return
			}
			if (item.kind !== 'frame') continue
			const event = item.message
			if (event.type === 'data' && typeof event.data === 'string') {
				this.#nextOffset = numberField(event, 'nextOffset', this.#nextOffset)
				this.#data.emit(event.data)
			} else if (event.type === 'exit') {
				this.#nextOffset = numberField(event, 'nextOffset', this.#nextOffset)
				if (this.#settled) continue
				this.#settled = true
				const exitCode = typeof event.exitCode === 'number' ? event.exitCode : -1
				this.#resolveExit(
					typeof event.signal === 'number' ? { exitCode, signal: event.signal } : { exitCode },
				)
			} else if (event.type === 'detached') {
				const reason = event.reason === 'slow_reader' ? 'slow-reader' : 'superseded'
				this.#detached(reason, numberField(event, 'nextOffset', this.#nextOffset))
			}
		}
	}
}
