/**
 * Runs one `execute` command: spawns it detached (its own process group; with workload cgroups,
 * also a cgroup of its own, joined before it runs), feeds stdin then closes it, forwards
 * stdout/stderr as UTF-8 text through an `OutputSink` under the per-stream byte cap, enforces the
 * timeout (SIGTERM the group → grace → SIGKILL, then the command's cgroup killed as a whole,
 * `timedOut: true`) and settles exactly once with the result fields or a spawn error. A command
 * that exits by itself keeps its background descendants; its cgroup is removed once they are gone.
 * It knows nothing about execution ids, leases or cancellation outcomes — the execution registry
 * decides what a finished run means.
 */
import type { ChildProcess } from 'node:child_process'
import type { ExecResultEvent } from '../../wire/protocol.js'
import { childEnvironment } from '../process/child-env.js'
import {
	signalProcessGroup,
	type TerminateOutcome,
	terminateProcessGroup,
} from '../process/process-group.js'
import type { WorkloadCgroups } from '../process/workload-cgroups.js'
import {
	type CommandTree,
	spawnWorkload,
	WORKLOAD_CGROUP_JOIN_FAILED,
} from '../process/workload-spawn.js'
import { OpRefusal } from '../server/op-refusal.js'
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
}

export interface TerminationTiming {
	readonly graceMs: number
	readonly confirmTimeoutMs: number
}

export interface ExecutionProcess {
	/** Process group id (= the leader's pid); undefined when the spawn itself failed. */
	readonly pgid: number | undefined
	/** Settles once, after the leader exited and its output pipes closed. */
	readonly outcome: Promise<ExecutionOutcome>
	/** SIGTERM → grace → SIGKILL → confirm on the whole group, then its whole cgroup. */
	terminate(): Promise<TerminateOutcome>
	/** Immediate SIGKILL of the whole group and cgroup (agent shutdown, a lost connection). */
	kill(): void
}

/**
 * After the leader exited and we signalled the group, a process that escaped the group may still
 * hold the output pipes open; past this bound we stop waiting for them.
 */
const PIPE_DRAIN_AFTER_TERMINATION_MS = 500

function spawnFailure(error: Error): ExecutionProcess {
	// A refusal (the command's cgroup could not be made) is reported by its code.
	const text = error instanceof OpRefusal ? (error.detail ?? error.error) : error.message
	return {
		pgid: undefined,
		outcome: Promise.resolve({ kind: 'error', error: text }),
		terminate: () => Promise.resolve('exited-on-sigterm'),
		kill: () => {},
	}
}

function pipeOutput(
	child: ChildProcess,
	stream: 'stdout' | 'stderr',
	capture: OutputCapture,
	sink: OutputSink,
): void {
	const readable = child[stream]
	if (!readable) return
	readable.on('data', (chunk: Buffer) => {
		const text = capture.push(chunk)
		if (text === '' || sink.write(stream, text)) return
		// The reader is behind: hold the child's pipes (it blocks on write) until it catches up.
		child.stdout?.pause()
		child.stderr?.pause()
		sink.onDrain(() => {
			child.stdout?.resume()
			child.stderr?.resume()
		})
	})
	readable.on('error', () => {})
}

export function startExecutionProcess(
	command: ExecutionCommand,
	timing: TerminationTiming,
	sink: OutputSink,
	cgroups?: WorkloadCgroups,
): ExecutionProcess {
	let child: ChildProcess
	let tree: CommandTree
	let joinFailure: Promise<string | undefined>
	try {
		;({ child, tree, joinFailure } = spawnWorkload(cgroups, {
			command: command.command,
			args: command.args,
			cwd: command.cwd,
			env: childEnvironment(command.env),
			stdin: 'pipe',
		}))
	} catch (error) {
		return spawnFailure(error instanceof Error ? error : new Error(String(error)))
	}
	const startedAt = performance.now()
	const pgid = child.pid
	if (pgid === undefined) {
		// uv_spawn failed (ENOENT, EACCES, …): Node reports it as an 'error' event on the next tick.
		return {
			pgid: undefined,
			outcome: new Promise((resolve) => {
				child.once('error', (error) => resolve({ kind: 'error', error: error.message }))
			}),
			terminate: () => Promise.resolve('exited-on-sigterm'),
			kill: () => {},
		}
	}

	const stdout = new OutputCapture(command.maxOutputBytes)
	const stderr = new OutputCapture(command.maxOutputBytes)
	let timedOut = false
	let closed = false
	let exited = false
	let terminating = false
	let termination: Promise<TerminateOutcome> | undefined
	let drainTimer: NodeJS.Timeout | undefined

	const scheduleDrain = () => {
		if (!exited || !terminating || drainTimer) return
		drainTimer = setTimeout(() => {
			child.stdout?.destroy()
			child.stderr?.destroy()
		}, PIPE_DRAIN_AFTER_TERMINATION_MS)
	}
	const terminate = (): Promise<TerminateOutcome> => {
		// After 'close' the pgid may be free for reuse: never signal it again.
		if (closed) return Promise.resolve('exited-on-sigterm')
		terminating = true
		scheduleDrain()
		termination ??= terminateTree(pgid, tree, timing)
		return termination
	}

	child.stdin?.on('error', () => {}) // a child that never reads stdin is not our failure
	child.stdin?.end(command.stdin ?? '')
	pipeOutput(child, 'stdout', stdout, sink)
	pipeOutput(child, 'stderr', stderr, sink)
	child.on('error', () => {}) // post-spawn errors (e.g. a failed kill) surface via 'close'

	const timer = setTimeout(() => {
		timedOut = true
		void terminate()
	}, command.timeoutMs)

	child.once('exit', () => {
		exited = true
		scheduleDrain()
	})
	const outcome = new Promise<ExecutionOutcome>((resolve) => {
		child.once('close', (code, signal) => {
			closed = true
			clearTimeout(timer)
			if (drainTimer) clearTimeout(drainTimer)
			const tailOut = stdout.end()
			if (tailOut !== '') sink.write('stdout', tailOut)
			const tailErr = stderr.end()
			if (tailErr !== '') sink.write('stderr', tailErr)
			const durationMs = Math.round(performance.now() - startedAt)
			const settle = async () => {
				// A run being terminated reports once its whole tree is gone (or the kill gave up).
				await termination?.catch(() => undefined)
				tree.release()
				const failedJoin = await joinFailure
				if (failedJoin !== undefined) {
					resolve({ kind: 'error', error: `${WORKLOAD_CGROUP_JOIN_FAILED}: ${failedJoin}` })
					return
				}
				resolve({
					kind: 'result',
					result: {
						exitCode: code ?? -1,
						timedOut,
						durationMs,
						...(signal ? { signal } : {}),
						stdoutTruncated: stdout.truncated,
						stderrTruncated: stderr.truncated,
					},
				})
			}
			void settle()
		})
	})

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
	}
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
