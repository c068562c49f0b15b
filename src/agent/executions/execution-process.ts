/**
 * Runs one `execute` command: spawns it detached (its own process group), feeds stdin then closes
 * it, forwards stdout/stderr as UTF-8 text through an `OutputSink` under the per-stream byte cap,
 * enforces the timeout (SIGTERM the group → grace → SIGKILL, `timedOut: true`) and settles exactly
 * once with the result fields or a spawn error. It knows nothing about execution ids, leases or
 * cancellation outcomes — the execution registry decides what a finished run means.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import type { ExecResultEvent } from '../../wire/protocol.js'
import { childEnvironment } from '../process/child-env.js'
import {
	signalProcessGroup,
	type TerminateOutcome,
	terminateProcessGroup,
} from '../process/process-group.js'
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
	/** SIGTERM → grace → SIGKILL → confirm on the whole group. */
	terminate(): Promise<TerminateOutcome>
	/** Immediate SIGKILL of the whole group (agent shutdown). */
	kill(): void
}

/**
 * After the leader exited and we signalled the group, a process that escaped the group may still
 * hold the output pipes open; past this bound we stop waiting for them.
 */
const PIPE_DRAIN_AFTER_TERMINATION_MS = 500

function spawnFailure(error: Error): ExecutionProcess {
	return {
		pgid: undefined,
		outcome: Promise.resolve({ kind: 'error', error: error.message }),
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
): ExecutionProcess {
	let child: ChildProcess
	try {
		child = spawn(command.command, [...command.args], {
			cwd: command.cwd,
			env: childEnvironment(command.env),
			detached: true,
			stdio: ['pipe', 'pipe', 'pipe'],
		})
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
		return terminateProcessGroup(pgid, timing)
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
			resolve({
				kind: 'result',
				result: {
					exitCode: code ?? -1,
					timedOut,
					durationMs: Math.round(performance.now() - startedAt),
					...(signal ? { signal } : {}),
					stdoutTruncated: stdout.truncated,
					stderrTruncated: stderr.truncated,
				},
			})
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
		},
	}
}
