/**
 * One guest session: a program — a persistent PTY or a detached
 * process — whose output is drained into an `OutputLog` ring whether or not anybody is attached,
 * plus its state (`running` → `exited`), timestamps and at most ONE attachment. The session owns
 * no socket: an attachment (session-attachment.ts) subscribes to it, and the program's I/O shell
 * (ops/persistent-terminal.ts, ops/start-detached.ts) feeds it through `append` and `markExited`.
 *
 * Text is decoded per stream before it enters the ring, so the ring holds whole UTF-8 characters
 * and a replay never starts inside one (except where eviction cut the oldest entry).
 */
import { constants as osConstants } from 'node:os'
import {
	type SessionKind,
	type SessionSignal,
	type SessionState,
	type SessionSummaryWire,
	summaryCommandLine,
	type WireSessionDetachReason,
} from '../../wire/sessions.js'
import { type OutputEntry, OutputLog, type OutputStream } from '../process/output-log.js'
import type { TerminalSize } from '../process/terminal-request.js'

/** What the session can do to the program behind it. */
export interface SessionProgram {
	readonly pid: number | undefined
	/** Writes keyboard input; false when the program is not taking more yet. */
	input(data: string): boolean
	/** Calls `listener` once input may be written again. */
	onInputDrain(listener: () => void): void
	resize(size: TerminalSize): void
	/** Signals every process still in the program's kernel session; returns how many. */
	signal(signal: SessionSignal): number
	/** SIGKILL for everything the session started (agent shutdown). Synchronous. */
	teardown(): void
	/** Settles once the last SIGKILL teardown is done with the program's whole tree. */
	readonly tornDown: Promise<void>
}

/** The one attachment a session may have (session-attachment.ts). */
export interface SessionObserver {
	/** An entry was appended to the ring. */
	output(entry: OutputEntry): void
	/** The program exited. */
	exited(): void
	/** Another attachment took the session, or the reader fell a whole ring behind. */
	detach(reason: WireSessionDetachReason): void
}

export interface SessionIdentity {
	readonly sessionId: string
	readonly kind: SessionKind
	readonly command: string
	readonly args: readonly string[]
}

export class Session {
	readonly sessionId: string
	readonly kind: SessionKind
	readonly command: string
	readonly args: readonly string[]
	readonly startedAt = Date.now()
	readonly log: OutputLog
	lastInputAt: number | undefined
	lastOutputAt: number | undefined
	#state: SessionState = 'running'
	#exitCode: number | undefined
	#signal: string | undefined
	#killRequested = false
	#program: SessionProgram | undefined
	#observer: SessionObserver | undefined
	readonly #exitWaiters = new Set<() => void>()
	readonly #onExit: (session: Session) => void

	constructor(identity: SessionIdentity, logBytes: number, onExit: (session: Session) => void) {
		this.sessionId = identity.sessionId
		this.kind = identity.kind
		this.command = identity.command
		this.args = [...identity.args]
		this.log = new OutputLog(logBytes)
		this.#onExit = onExit
	}

	get state(): SessionState {
		return this.#state
	}

	get program(): SessionProgram | undefined {
		return this.#program
	}

	get exitCode(): number | undefined {
		return this.#exitCode
	}

	/** Signal number the program died of, for the terminal-style `exit` event. */
	get signalNumber(): number | undefined {
		if (this.#signal === undefined) return undefined
		return osConstants.signals[this.#signal as NodeJS.Signals]
	}

	get attached(): boolean {
		return this.#observer !== undefined
	}

	/** BackgroundJobOutput status: `killed` when it exited after a `kill-session`. */
	get status(): 'running' | 'exited' | 'killed' {
		if (this.#state === 'running') return 'running'
		return this.#killRequested ? 'killed' : 'exited'
	}

	/** The program is spawned; input, resize and kill now reach it. */
	start(program: SessionProgram): void {
		this.#program = program
	}

	appendText(stream: OutputStream, text: string): void {
		if (text === '') return
		const bytes = Buffer.from(text, 'utf8')
		const { offset } = this.log.append(stream, bytes)
		this.lastOutputAt = Date.now()
		const entry: OutputEntry =
			bytes.length <= this.log.capacityBytes
				? { stream, offset, data: bytes }
				: {
						stream,
						offset: offset + bytes.length - this.log.capacityBytes,
						data: bytes.subarray(bytes.length - this.log.capacityBytes),
					}
		this.#observer?.output(entry)
	}

	input(data: string): boolean {
		this.lastInputAt = Date.now()
		return this.#program?.input(data) ?? true
	}

	/** Records the exit once; the attachment is told after its replay caught up. */
	markExited(code: number | null, signal: NodeJS.Signals | null): void {
		if (this.#state === 'exited') return
		const signalNumber = signal === null ? undefined : osConstants.signals[signal]
		this.#state = 'exited'
		this.#exitCode = code ?? (signalNumber === undefined ? -1 : 128 + signalNumber)
		if (signal !== null) this.#signal = signal
		for (const waiter of [...this.#exitWaiters]) waiter()
		this.#exitWaiters.clear()
		this.#observer?.exited()
		this.#onExit(this)
	}

	/** Marks a kill as asked for (status `killed` once it exits) and signals the program. */
	kill(signal: SessionSignal): number {
		if (this.#state === 'exited') return 0
		this.#killRequested = true
		return this.#program?.signal(signal) ?? 0
	}

	/** Resolves true once exited, false after `timeoutMs`. */
	whenExited(timeoutMs: number): Promise<boolean> {
		if (this.#state === 'exited') return Promise.resolve(true)
		return new Promise((resolve) => {
			const done = () => {
				clearTimeout(timer)
				resolve(true)
			}
			const timer = setTimeout(() => {
				this.#exitWaiters.delete(done)
				resolve(false)
			}, timeoutMs)
			this.#exitWaiters.add(done)
		})
	}

	/** Makes `observer` THE attachment; a previous one is ended as superseded first. */
	attach(observer: SessionObserver): void {
		const previous = this.#observer
		this.#observer = observer
		if (previous && previous !== observer) previous.detach('superseded')
	}

	/** Forgets `observer` if it is still the attachment (its connection ended). */
	release(observer: SessionObserver): void {
		if (this.#observer === observer) this.#observer = undefined
	}

	summary(): SessionSummaryWire {
		return {
			sessionId: this.sessionId,
			kind: this.kind,
			...summaryCommandLine(this.command, this.args),
			startedAt: this.startedAt,
			...(this.lastInputAt === undefined ? {} : { lastInputAt: this.lastInputAt }),
			...(this.lastOutputAt === undefined ? {} : { lastOutputAt: this.lastOutputAt }),
			nextOffset: this.log.nextOffset,
			droppedBytes: this.log.droppedBytes,
			state: this.#state,
			attached: this.attached,
			...(this.#exitCode === undefined ? {} : { exitCode: this.#exitCode }),
			...(this.#signal === undefined ? {} : { signal: this.#signal }),
			...(this.#killRequested ? { killed: true } : {}),
		}
	}
}
