/**
 * The persistent path of `terminal` (`sessionId` + `persistent: true`): the same util-linux
 * `script` PTY as a plain terminal, but registered in the session registry. Its output is drained
 * into the session's ring from the first byte, whether or not anybody is attached, so the program
 * never stalls on a full PTY. The opening connection is just the session's first attachment:
 * closing it DETACHES and signals nothing. The session ends when its program exits (everything
 * left in the shell's kernel session is then SIGKILLed after `NAMZU_AGENT_CANCEL_GRACE_MS`), on
 * `kill-session`, or when the agent stops (a shutdown hook).
 */
import type { ChildProcess } from 'node:child_process'
import type { Readable } from 'node:stream'
import { StringDecoder } from 'node:string_decoder'
import type { SessionSignal } from '../../wire/sessions.js'
import type { OpContext } from '../handler/op-context.js'
import type { OutputStream } from '../process/output-log.js'
import {
	failTerminalStart,
	type PtyShell,
	planPtyLaunch,
	runStty,
	type ScriptPty,
	searchScriptPty,
	spawnScriptPty,
} from '../process/pty-process.js'
import type { SessionTeardown } from '../process/session-teardown.js'
import type { TerminalSize, TerminalSpec } from '../process/terminal-request.js'
import type { Session, SessionProgram } from '../sessions/session.js'
import { SessionAttachment } from '../sessions/session-attachment.js'
import { sessionRegistry } from '../sessions/session-registry.js'
import { signalKernelSession } from '../sessions/session-signal.js'

/** After the program exited, how long stdio may stay open before the exit is recorded anyway. */
export const SESSION_EXIT_SETTLE_MS = 1000

/** Decodes each stream into the session's ring from the first byte; never pauses. */
export function drainIntoSession(
	session: Session,
	streams: ReadonlyArray<readonly [OutputStream, Readable | null]>,
): void {
	for (const [name, stream] of streams) {
		if (!stream) continue
		const decoder = new StringDecoder('utf8')
		stream.on('data', (chunk: Buffer) => session.appendText(name, decoder.write(chunk)))
		stream.on('end', () => session.appendText(name, decoder.end()))
		stream.on('error', () => undefined)
	}
}

/**
 * Records the exit once the program is gone. `graceMs` after its `exit`, `onExit` runs (the
 * SIGKILL of whatever is left in its kernel session — the grace lets a job that was sent the same
 * SIGTERM finish its own cleanup); the exit is recorded when stdio closed, or a settle bound after
 * the teardown, since a process that left the session may still hold a pipe.
 */
export function recordExitWhenDone(
	child: ChildProcess,
	session: Session,
	graceMs: number,
	onExit: () => void,
): void {
	let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined
	child.once('exit', (code: number | null, signal: NodeJS.Signals | null) => {
		exit = { code, signal }
		setTimeout(() => {
			onExit()
			setTimeout(() => session.markExited(code, signal), SESSION_EXIT_SETTLE_MS).unref()
		}, graceMs).unref()
	})
	child.once('close', (code: number | null, signal: NodeJS.Signals | null) => {
		session.markExited(exit?.code ?? code, exit?.signal ?? signal)
	})
}

class TerminalProgram implements SessionProgram {
	readonly #child: ChildProcess
	readonly #teardown: SessionTeardown
	readonly #env: Record<string, string>
	#shell: PtyShell | undefined

	constructor(child: ChildProcess, teardown: SessionTeardown, env: Record<string, string>) {
		this.#child = child
		this.#teardown = teardown
		this.#env = env
	}

	get pid(): number | undefined {
		return this.#shell?.pid ?? this.#child.pid
	}

	set shell(shell: PtyShell | undefined) {
		this.#shell = shell
	}

	input(data: string): boolean {
		const stdin = this.#child.stdin
		if (!stdin || stdin.destroyed) return true
		return stdin.write(data)
	}

	onInputDrain(listener: () => void): void {
		const stdin = this.#child.stdin
		if (!stdin || stdin.destroyed) listener()
		else stdin.once('drain', listener)
	}

	resize(size: TerminalSize): void {
		if (this.#shell) void runStty(this.#shell.slave, size, this.#env)
	}

	signal(signal: SessionSignal): number {
		if (signal === 'SIGKILL') return this.#teardown.run()
		const session = this.#teardown.session
		// The shell's kernel session holds the shell and every job it started; script follows them.
		return session === undefined
			? 0
			: signalKernelSession(session, signal, this.#teardown.treeMembers())
	}

	teardown(): void {
		this.#teardown.run()
	}

	get tornDown(): Promise<void> {
		return this.#teardown.finished
	}
}

export async function persistentTerminal(
	spec: TerminalSpec,
	sessionId: string,
	ctx: OpContext,
	body: Record<string, unknown> = {},
): Promise<void> {
	const launch = planPtyLaunch(ctx.config, spec)
	const { env } = launch
	const registry = sessionRegistry(ctx.config.sessions)
	const session = registry.create(sessionId, 'terminal', spec.command, spec.args)

	// Frames before ready are queued, then handed to the attachment.
	const queued: Record<string, unknown>[] = []
	let attachment: SessionAttachment | undefined
	ctx.onFrame((message) => {
		if (attachment) attachment.handle(message)
		else queued.push(message)
	})

	let pty: ScriptPty
	try {
		pty = spawnScriptPty(spec, launch, ctx.workloadCgroups, ctx.config.cancelConfirmTimeoutMs)
	} catch (error) {
		registry.remove(session)
		throw error
	}
	const { child, teardown } = pty
	const program = new TerminalProgram(child, teardown, env)
	session.start(program)
	drainIntoSession(session, [
		['stdout', child.stdout],
		['stderr', child.stderr],
	])
	child.stdin?.on('error', () => undefined)
	// The session ends with its program; whatever it left in the shell's session dies with it.
	recordExitWhenDone(child, session, ctx.config.cancelGraceMs, () => teardown.run())

	const search = await searchScriptPty(pty)
	if (search instanceof Error || (search.shell === undefined && !search.exited)) {
		registry.remove(session)
		await failTerminalStart(pty, search, ctx)
		return
	}
	program.shell = search.shell
	if (search.shell) await runStty(search.shell.slave, spec, env)
	// Nobody to attach: the session simply runs detached.
	if (ctx.closed) return
	const live = new SessionAttachment(ctx, session)
	attachment = live
	live.start(0, { body })
	for (const message of queued.splice(0)) live.handle(message)
}
