/**
 * Runs one `execute` command: spawns it detached (its own process group; with workload cgroups,
 * also a cgroup of its own, joined before it runs), feeds stdin then closes it, forwards
 * stdout/stderr as UTF-8 text through an `OutputSink` under the per-stream byte cap, enforces the
 * timeout (SIGTERM the group → grace → SIGKILL, then the command's cgroup killed as a whole,
 * `timedOut: true`) and settles exactly once with the result fields or a spawn error. The run ends
 * when the command's own process exits: what a background descendant still writes to the inherited
 * pipes is read for `DESCENDANT_OUTPUT_DRAIN_MS` more, then read and dropped (never closed under
 * it: a server that logs must not die of SIGPIPE). A command that exits by itself keeps those
 * descendants (`keepDescendants`, default true) and its cgroup is removed once they are gone; with
 * `keepDescendants: false` its whole tree is killed the moment it exits.
 * It knows nothing about execution ids, leases or cancellation outcomes — the execution registry
 * decides what a finished run means.
 */
import type { ChildProcess } from 'node:child_process'
import type { ExecResultEvent } from '../../wire/protocol.js'
import { formatRefusal } from '../../wire/refusals.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { childEnvironment } from '../process/child-env.js'
import {
	isProcessGroupAlive,
	signalProcessGroup,
	type TerminateOutcome,
	terminateProcessGroup,
	waitForProcessGroupExit,
} from '../process/process-group.js'
import type { WorkloadCgroups } from '../process/workload-cgroups.js'
import {
	type CommandTree,
	type StartedAhead,
	spawnWorkload,
	WORKLOAD_CGROUP_JOIN_FAILED,
} from '../process/workload-spawn.js'
import { OutputCapture } from './output-capture.js'

export type ExecResultFields = Omit<ExecResultEvent, 'type'>

export type ExecutionOutcome =
	| { readonly kind: 'result'; readonly result: ExecResultFields }
	| { readonly kind: 'error'; readonly error: string }

/** Where output goes. `write` returns false when the reader wants us to wait for `onDrain`. */
export interface OutputSink {
	write(stream: 'stdout' | 'stderr', text: string): boolean
	onDrain(resume: () => void): void
}

export interface ExecutionCommand {
	readonly command: string
	readonly args: readonly string[]
	readonly cwd: string
	readonly env?: Readonly<Record<string, string>>
	readonly stdin?: string
	readonly timeoutMs: number
	readonly maxOutputBytes: number
	/** false: kill the command's whole tree when it exits. Default true: descendants run on. */
	readonly keepDescendants?: boolean
	/** Keep stdin open for `writeStdin` instead of writing `stdin` and closing it. */
	readonly openStdin?: boolean
}

export interface TerminationTiming {
	readonly graceMs: number
	readonly confirmTimeoutMs: number
}

export interface ExecutionProcess {
	/** Process group id (= the leader's pid); undefined when the spawn itself failed. */
	readonly pgid: number | undefined
	/** Settles once: the leader exited and its pipes closed or the descendant drain ran out. */
	readonly outcome: Promise<ExecutionOutcome>
	/** SIGTERM → grace → SIGKILL → confirm on the whole group, then its whole cgroup. */
	terminate(): Promise<TerminateOutcome>
	/** Immediate SIGKILL of the whole group and cgroup (agent shutdown, a lost connection). */
	kill(): void
	/**
	 * Hands `data` to the open stdin (resolving once the pipe took it), then closes it when `end`;
	 * false when stdin is not open (never opened, closed, or the run settled).
	 */
	writeStdin(data: Buffer, end: boolean): Promise<boolean>
	/** One signal to the whole group (`SIGKILL`: the cgroup too); false once the run settled. */
	signal(name: NodeJS.Signals): boolean
}

/**
 * After the leader exited and we signalled the group, a process that escaped the group may still
 * hold the output pipes open; past this bound we stop waiting for them.
 */
const PIPE_DRAIN_AFTER_TERMINATION_MS = 500

/**
 * After the command's own process exited, how long output still arriving through the pipes (from
 * a descendant that inherited them, or the kernel's last buffered bytes) is added to the result.
 */
export const DESCENDANT_OUTPUT_DRAIN_MS = 200

/** What a run that never started answers to the verbs that need a process. */
const NO_PROCESS = {
	pgid: undefined,
	terminate: () => Promise.resolve<TerminateOutcome>('exited-on-sigterm'),
	kill: () => {},
	writeStdin: () => Promise.resolve(false),
	signal: () => false,
} as const

function spawnFailure(error: Error): ExecutionProcess {
	// A refusal (the command's cgroup could not be made) is reported by its code.
	const text = error instanceof OpRefusal ? (error.detail ?? error.error) : error.message
	return { ...NO_PROCESS, outcome: Promise.resolve({ kind: 'error', error: text }) }
}

/** The stdin of a run started with `openStdin`: open until `end`, the run settled, or EPIPE. */
function openStdinWriter(
	child: ChildProcess,
	settled: () => boolean,
): (data: Buffer, end: boolean) => Promise<boolean> {
	let open = true
	child.stdin?.once('close', () => {
		open = false
	})
	return (data, end) => {
		const stdin = child.stdin
		if (!open || settled() || !stdin || stdin.writableEnded) return Promise.resolve(false)
		if (end) open = false
		return new Promise<boolean>((resolve) => {
			const done = (error?: Error | null) => resolve(error === undefined || error === null)
			if (data.length === 0) {
				if (end) stdin.end(() => resolve(true))
				else resolve(true)
				return
			}
			stdin.write(data, done)
			if (end) stdin.end()
		})
	}
}

/** Whether the reader is behind, so the pipes are held (the drain after exit waits for it). */
interface PipeHold {
	held: boolean
}

function pipeOutput(
	child: ChildProcess,
	stream: 'stdout' | 'stderr',
	capture: OutputCapture,
	sink: OutputSink,
	run: { readonly settled: () => boolean; readonly hold: PipeHold },
): void {
	const readable = child[stream]
	if (!readable) return
	readable.on('data', (chunk: Buffer) => {
		// Once the run settled, a descendant's output is read and dropped: the pipe stays open.
		if (run.settled()) return
		const text = capture.push(chunk)
		if (text === '' || sink.write(stream, text)) return
		// The reader is behind: hold the child's pipes (it blocks on write) until it catches up.
		run.hold.held = true
		child.stdout?.pause()
		child.stderr?.pause()
		sink.onDrain(() => {
			run.hold.held = false
			child.stdout?.resume()
			child.stderr?.resume()
		})
	})
	readable.on('error', () => {})
}

type ExitStatus = { readonly code: number | null; readonly signal: NodeJS.Signals | null }

// long: one closure holds the run's state machine (exit, drain, timeout, termination, settle)
export function startExecutionProcess(
	command: ExecutionCommand,
	timing: TerminationTiming,
	sink: OutputSink,
	cgroups?: WorkloadCgroups,
	ahead?: StartedAhead,
): ExecutionProcess {
	let child: ChildProcess
	let tree: CommandTree
	let joinFailure: Promise<string | undefined>
	try {
		;({ child, tree, joinFailure } = spawnWorkload(
			cgroups,
			{
				command: command.command,
				args: command.args,
				cwd: command.cwd,
				env: childEnvironment(command.env),
				stdin: 'pipe',
			},
			ahead,
		))
	} catch (error) {
		return spawnFailure(error instanceof Error ? error : new Error(String(error)))
	}
	const startedAt = performance.now()
	const pgid = child.pid
	if (pgid === undefined) {
		// uv_spawn failed (ENOENT, EACCES, …): Node reports it as an 'error' event on the next tick.
		return {
			...NO_PROCESS,
			outcome: new Promise((resolve) => {
				child.once('error', (error) => resolve({ kind: 'error', error: error.message }))
			}),
		}
	}

	const stdout = new OutputCapture(command.maxOutputBytes)
	const stderr = new OutputCapture(command.maxOutputBytes)
	let timedOut = false
	/** The run settled: the pgid may be free for reuse, never signal it again. */
	let closed = false
	let exit: ExitStatus | undefined
	let exitedAt: number | undefined
	let terminating = false
	let termination: Promise<TerminateOutcome> | undefined
	let descendantsKilled: Promise<unknown> | undefined
	let drainTimer: NodeJS.Timeout | undefined
	let descendantTimer: NodeJS.Timeout | undefined

	const scheduleDrain = () => {
		if (!exit || !terminating || drainTimer) return
		drainTimer = setTimeout(() => {
			child.stdout?.destroy()
			child.stderr?.destroy()
		}, PIPE_DRAIN_AFTER_TERMINATION_MS)
	}
	const terminate = (): Promise<TerminateOutcome> => {
		if (closed) return Promise.resolve('exited-on-sigterm')
		terminating = true
		scheduleDrain()
		termination ??= terminateTree(pgid, tree, timing)
		return termination
	}

	child.stdin?.on('error', () => {}) // a child that never reads stdin is not our failure
	if (command.openStdin !== true) child.stdin?.end(command.stdin ?? '')
	const writeStdin =
		command.openStdin === true ? openStdinWriter(child, () => closed) : NO_PROCESS.writeStdin
	const hold: PipeHold = { held: false }
	const run = { settled: () => closed, hold }
	pipeOutput(child, 'stdout', stdout, sink, run)
	pipeOutput(child, 'stderr', stderr, sink, run)
	child.on('error', () => {}) // post-spawn errors (e.g. a failed kill) surface via 'close'

	const timer = setTimeout(() => {
		timedOut = true
		void terminate()
	}, command.timeoutMs)

	let resolveOutcome: (outcome: ExecutionOutcome) => void = () => {}
	const outcome = new Promise<ExecutionOutcome>((resolve) => {
		resolveOutcome = resolve
	})
	const finish = ({ code, signal }: ExitStatus) => {
		if (closed) return
		closed = true
		// Nobody can write to a settled run: a descendant still reading stdin sees its end.
		if (command.openStdin === true) child.stdin?.destroy()
		clearTimeout(timer)
		clearTimeout(drainTimer)
		clearTimeout(descendantTimer)
		// Nothing holds a descendant's writes any more: what it writes from now on is dropped.
		child.stdout?.resume()
		child.stderr?.resume()
		const tailOut = stdout.end()
		if (tailOut !== '') sink.write('stdout', tailOut)
		const tailErr = stderr.end()
		if (tailErr !== '') sink.write('stderr', tailErr)
		const durationMs = Math.round((exitedAt ?? performance.now()) - startedAt)
		const settle = async () => {
			// A run being terminated reports once its whole tree is gone (or the kill gave up).
			await termination?.catch(() => undefined)
			await descendantsKilled?.catch(() => undefined)
			const usage = tree.usage()
			// Removing the group waits for the kernel's cgroup lock, which a migration elsewhere can
			// hold for a whole RCU grace period after a quiet spell: the result goes out first.
			setImmediate(() => tree.release())
			const failedJoin = await joinFailure
			if (failedJoin !== undefined) {
				resolveOutcome({
					kind: 'error',
					error: formatRefusal(WORKLOAD_CGROUP_JOIN_FAILED, failedJoin),
				})
				return
			}
			resolveOutcome({
				kind: 'result',
				result: {
					exitCode: code ?? -1,
					timedOut,
					durationMs,
					...(signal ? { signal } : {}),
					stdoutTruncated: stdout.truncated,
					stderrTruncated: stderr.truncated,
					...usage,
				},
			})
		}
		void settle()
	}

	child.once('exit', (code, signal) => {
		exit = { code, signal }
		exitedAt = performance.now()
		if (terminating) {
			scheduleDrain()
			return
		}
		if (command.keepDescendants === false) {
			descendantsKilled = killTree(pgid, tree, timing.confirmTimeoutMs)
			return // the pipes close once the tree is gone
		}
		// Nothing left that could hold the pipes: everything written is read to the end.
		if (!hasDescendants(pgid, tree)) return
		const status = exit
		const drain = () => {
			// Never cut what is waiting for a slow reader: the drain counts only unheld time.
			if (hold.held) descendantTimer = setTimeout(drain, DESCENDANT_OUTPUT_DRAIN_MS)
			else finish(status)
		}
		descendantTimer = setTimeout(drain, DESCENDANT_OUTPUT_DRAIN_MS)
	})
	child.once('close', (code, signal) => finish(exit ?? { code, signal }))

	return {
		pgid,
		outcome,
		terminate,
		kill: () => {
			if (closed) return
			terminating = true
			scheduleDrain()
			signalProcessGroup(pgid, 'SIGKILL')
			void tree.kill(timing.confirmTimeoutMs)
		},
		writeStdin,
		signal: (name) => {
			if (closed) return false
			if (name === 'SIGKILL') void killTree(pgid, tree, timing.confirmTimeoutMs)
			else signalProcessGroup(pgid, name)
			return true
		},
	}
}

/** Whether anything the command started is still alive (its cgroup, else its process group). */
function hasDescendants(pgid: number, tree: CommandTree): boolean {
	if (tree.grouped) return tree.members().length > 0
	try {
		return isProcessGroupAlive(pgid)
	} catch {
		return true
	}
}

/** SIGKILL of what the command left behind: its cgroup when it has one, else its process group. */
function killTree(pgid: number, tree: CommandTree, confirmTimeoutMs: number): Promise<unknown> {
	if (tree.grouped) return tree.kill(confirmTimeoutMs)
	signalProcessGroup(pgid, 'SIGKILL')
	return waitForProcessGroupExit(pgid, confirmTimeoutMs)
}

/**
 * The process group's SIGTERM → grace → SIGKILL, then the command's cgroup killed as a whole: only
 * an empty cgroup confirms, since a `setsid` descendant is in no group we can signal.
 */
async function terminateTree(
	pgid: number,
	tree: CommandTree,
	timing: TerminationTiming,
): Promise<TerminateOutcome> {
	const outcome = await terminateProcessGroup(pgid, timing)
	if (!tree.grouped) return outcome
	const empty = await tree.kill(timing.confirmTimeoutMs)
	if (!empty) return 'unconfirmed'
	return outcome === 'unconfirmed' ? 'killed' : outcome
}
