import type { ChildProcess } from 'node:child_process'
import { constants as osConstants } from 'node:os'
import type { Readable } from 'node:stream'
import { StringDecoder } from 'node:string_decoder'
import type { OpContext, OpHandler } from '../handler/op-context.js'
import { sendStreamReady } from '../handler/stream-heartbeat.js'
import { guestBootId } from '../lifecycle/guest-boot-id.js'
import { registerShutdownHook } from '../lifecycle/shutdown-hooks.js'
import {
	type Exit,
	failTerminalStart,
	type PtyShell,
	planPtyLaunch,
	runStty,
	searchScriptPty,
	spawnScriptPty,
} from '../process/pty-process.js'
import type { SessionTeardown } from '../process/session-teardown.js'
import {
	handleTerminalClientFrame,
	type TerminalFrameTarget,
} from '../process/terminal-client-frame.js'
import { parseTerminalRequest } from '../process/terminal-request.js'
import { parsePersistentTerminal } from '../sessions/session-request.js'
import { persistentTerminal } from './persistent-terminal.js'

/** Output held while the terminal is not yet ready, before the pipes are paused. */
const PENDING_OUTPUT_MAX_CHARS = 1024 * 1024

/**
 * `terminal`: a PTY through util-linux `script`. Events `ready`, `data`, `exit`, terminator; client
 * frames `input`, `resize`, `kill` (queued until ready). When the terminal ends — the connection
 * closes, it is killed, or its program exits — every process still in the kernel session the
 * shell was started in is SIGKILLed, plus `script`'s own group, so a job backgrounded with `&`
 * dies with the terminal instead of outliving it unreachable. With `sessionId` + `persistent: true`
 * the PTY belongs to the session registry instead (persistent-terminal.ts): closing detaches.
 */
export const terminal: OpHandler = async (body, ctx) => {
	const spec = parseTerminalRequest(body)
	const sessionId = parsePersistentTerminal(body)
	if (sessionId !== undefined) return persistentTerminal(spec, sessionId, ctx, body)
	const launch = planPtyLaunch(ctx.config, spec)
	const { env } = launch

	const queued: Record<string, unknown>[] = []
	let live: LiveTerminal | undefined
	ctx.onFrame((message) => {
		if (live) live.handle(message)
		else queued.push(message)
	})

	const pty = spawnScriptPty(spec, launch, ctx.workloadCgroups, ctx.config.cancelConfirmTimeoutMs)
	const { child, teardown } = pty
	// Read from the start: Node resumes unread stdio when the child exits, which would drop the
	// output of a program that finishes before the PTY is found.
	const output = new TerminalOutput(ctx, [child.stdout, child.stderr])
	ctx.onClose(() => teardown.run())
	// process.exit on SIGTERM fires no socket close: the terminal must still die with the agent.
	const unregisterShutdown = registerShutdownHook(() => teardown.run())
	ctx.onClose(unregisterShutdown)
	// A broken stdin (script gone) surfaces as 'close'; never as an unhandled error.
	child.stdin?.on('error', () => undefined)

	const closed = new Promise<Exit>((resolve) =>
		child.once('close', (code: number | null, signal: NodeJS.Signals | null) =>
			resolve({ code, signal }),
		),
	)

	const search = await searchScriptPty(pty)
	if (search instanceof Error || (search.shell === undefined && !search.exited)) {
		await failTerminalStart(pty, search, ctx)
		return
	}
	// A program that exited before its PTY was seen still gets its output and exit reported.
	if (search.shell) await runStty(search.shell.slave, spec, env)
	if (ctx.closed) {
		teardown.run()
		return
	}
	sendStreamReady(ctx, body, { guestBootId: guestBootId() })
	output.start()
	live = new LiveTerminal(ctx, child, search.shell, env, teardown)
	void closed.then((exit) => live?.exited(exit))
	for (const message of queued.splice(0)) live.handle(message)
}

/** Output before `ready` is held (pausing the pipes past a bound); after it, sent with backpressure. */
class TerminalOutput {
	readonly #ctx: OpContext
	readonly #streams: Readable[]
	#pending: string[] | undefined = []
	#pendingChars = 0

	constructor(ctx: OpContext, streams: ReadonlyArray<Readable | null>) {
		this.#ctx = ctx
		this.#streams = streams.filter((stream) => stream !== null)
		for (const stream of this.#streams) {
			// Decodes across chunk boundaries, so a multi-byte character is never split into U+FFFD.
			const decoder = new StringDecoder('utf8')
			stream.on('data', (chunk: Buffer) => this.#emit(decoder.write(chunk)))
			stream.on('end', () => this.#emit(decoder.end()))
		}
	}

	start(): void {
		const pending = this.#pending ?? []
		this.#pending = undefined
		for (const stream of this.#streams) stream.resume()
		for (const data of pending) this.#emit(data)
	}

	#emit(data: string): void {
		if (data === '' || this.#ctx.closed) return
		if (this.#pending) {
			this.#pending.push(data)
			this.#pendingChars += data.length
			if (this.#pendingChars > PENDING_OUTPUT_MAX_CHARS) this.#pause()
			return
		}
		const ctx = this.#ctx
		const flowing = ctx.binaryFrames
			? ctx.sendBinary('data', Buffer.from(data, 'utf8'))
			: ctx.send({ type: 'data', data })
		if (!flowing) {
			this.#pause()
			this.#ctx.socket.once('drain', () => {
				for (const stream of this.#streams) stream.resume()
			})
		}
	}

	#pause(): void {
		for (const stream of this.#streams) stream.pause()
	}
}

class LiveTerminal {
	readonly #ctx: OpContext
	readonly #child: ChildProcess
	readonly #shell: PtyShell | undefined
	readonly #env: Record<string, string>
	readonly #teardown: SessionTeardown

	constructor(
		ctx: OpContext,
		child: ChildProcess,
		shell: PtyShell | undefined,
		env: Record<string, string>,
		teardown: SessionTeardown,
	) {
		this.#ctx = ctx
		this.#child = child
		this.#shell = shell
		this.#env = env
		this.#teardown = teardown
	}

	async exited({ code, signal }: Exit): Promise<void> {
		this.#teardown.run()
		// The exit is reported once the terminal's whole tree is gone.
		await this.#teardown.finished
		if (this.#ctx.closed) return
		const signalNumber = signal === null ? undefined : osConstants.signals[signal]
		const exitCode = code ?? (signalNumber === undefined ? -1 : 128 + signalNumber)
		this.#ctx.send({
			type: 'exit',
			exitCode,
			...(signalNumber === undefined ? {} : { signal: signalNumber }),
		})
		this.#ctx.endStream()
	}

	handle(message: Record<string, unknown>): void {
		handleTerminalClientFrame(message, this.#frameTarget, this.#ctx.socket)
	}

	readonly #frameTarget: TerminalFrameTarget = {
		input: (data) => {
			const stdin = this.#child.stdin
			// A closed PTY takes nothing; dropping the input is all there is to do.
			if (!stdin || stdin.destroyed) return true
			return stdin.write(data)
		},
		onInputDrain: (resume) => this.#child.stdin?.once('drain', resume),
		resize: (size) => {
			if (this.#shell) void runStty(this.#shell.slave, size, this.#env)
		},
		kill: (signal) => this.#kill(signal),
	}

	#kill(signal: NodeJS.Signals): void {
		if (signal === 'SIGKILL') {
			this.#teardown.run()
			return
		}
		// The program, and script (which ends its session on TERM/INT); the exit then tears down.
		for (const pid of [this.#shell?.pid ?? 0, -(this.#child.pid ?? 0)]) {
			if (pid === 0) continue
			try {
				process.kill(pid, signal)
			} catch {
				// Already gone.
			}
		}
	}
}
