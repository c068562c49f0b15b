/**
 * Starts the agent's process (bwrap, or plain node under isolation 'none') and owns it until it is
 * dead: stderr is drained into a tail for failure reports, and `kill()` SIGKILLs and awaits exit.
 * A process that must outlive the host (`outliveHost`) writes stderr through a bounded keeper that
 * outlives the host too (`stderr-log-keeper.ts`) and is unref'd so the host can exit.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { closeSync, fstatSync, openSync, readSync } from 'node:fs'
import type { Readable } from 'node:stream'
import { descendantPids, waitUntilGone } from '../claims/process-tree.js'
import { inheritableHostDescriptors, type StdioEntry, stdioCovering } from './launch-descriptors.js'
import { startStderrLogKeeper } from './stderr-log-keeper.js'
import { STDERR_TAIL_BYTES, StderrTail } from './stderr-tail.js'

export interface AgentLaunchSpec {
	/** Program first. */
	readonly argv: readonly string[]
	readonly env: Readonly<Record<string, string>>
	readonly cwd: string
	/** Values masked in the stderr tail. */
	readonly secrets: readonly string[]
	/** Listening socket descriptor handed to the child as fd 3. */
	readonly listenFd?: number
	/**
	 * Descriptors handed over after the listener (fd 4 onwards, in order): a host descriptor to
	 * duplicate, or `'pipe'` for a socket pair whose host end is `pipes.get(childFd)`.
	 */
	readonly extraFds?: readonly (number | 'pipe')[]
	/**
	 * Set for a kept-alive sandbox: the child is unref'd and the last bytes of its stderr land in
	 * this file once it has ended (through `tailPath`, coreutils `tail`).
	 */
	readonly outliveHost?: { readonly stderrPath: string; readonly tailPath?: string }
}

export interface ChildExit {
	readonly code: number | null
	readonly signal: NodeJS.Signals | null
	/** Set when the program could not be started at all. */
	readonly error?: Error
}

export interface LaunchedAgentProcess {
	readonly pid: number | undefined
	/** Settles once, when the process is gone (or never started). Never rejects. */
	readonly exited: Promise<ChildExit>
	/** Host ends of the `'pipe'` entries of `extraFds`, by the child's descriptor number. */
	readonly pipes: ReadonlyMap<number, Readable>
	exitStatus(): ChildExit | undefined
	stderrTail(): string
	/**
	 * SIGKILLs the process and every descendant it has (bwrap's pid namespace would take them down
	 * anyway; without bubblewrap nothing else would), then waits until all of them are gone.
	 * Idempotent.
	 */
	kill(): Promise<void>
}

/** Bound on waiting for killed descendants to vanish (they may linger as zombies of PID 1). */
const KILL_WAIT_MS = 5_000

function killQuietly(pid: number): void {
	try {
		process.kill(pid, 'SIGKILL')
	} catch {
		// ESRCH: already gone.
	}
}

/** Last `bytes` of a file (the stderr log of a kept-alive sandbox may grow over its lifetime). */
function readFileTail(path: string, bytes = 2 * STDERR_TAIL_BYTES): string {
	let fd: number | undefined
	try {
		fd = openSync(path, 'r')
		const size = fstatSync(fd).size
		const length = Math.min(size, bytes)
		const buffer = Buffer.alloc(length)
		readSync(fd, buffer, 0, length, size - length)
		return buffer.toString('utf8')
	} catch {
		return ''
	} finally {
		if (fd !== undefined) closeSync(fd)
	}
}

/**
 * Spawns the agent with exactly the descriptors `spec` hands it (every other inheritable host
 * descriptor covered by /dev/null).
 */
function spawnAgentChild(
	spec: AgentLaunchSpec,
	program: string,
	args: readonly string[],
	stderr: StdioEntry,
): ChildProcess {
	const devNull = openSync('/dev/null', 'r')
	try {
		return spawn(program, args, {
			// Its own process group: a terminal's Ctrl-C is for the host program, which cancels through
			// the AbortSignal; it must not kill the sandbox out from under that cancellation.
			detached: true,
			cwd: spec.cwd,
			env: { ...spec.env },
			stdio: stdioCovering(
				spec.listenFd === undefined
					? ['ignore', 'ignore', stderr]
					: ['ignore', 'ignore', stderr, spec.listenFd, ...(spec.extraFds ?? [])],
				inheritableHostDescriptors(),
				devNull,
			),
		})
	} finally {
		closeSync(devNull)
	}
}

/** The host ends of the `'pipe'` entries of `extraFds`, by the child's descriptor number. */
function pipesOf(
	child: ChildProcess,
	extraFds: AgentLaunchSpec['extraFds'],
): Map<number, Readable> {
	const pipes = new Map<number, Readable>()
	for (const [index, entry] of (extraFds ?? []).entries()) {
		const stream = child.stdio[4 + index]
		if (entry === 'pipe' && stream) pipes.set(4 + index, stream as Readable)
	}
	return pipes
}

export function launchAgentProcess(spec: AgentLaunchSpec): LaunchedAgentProcess {
	const [program, ...args] = spec.argv
	if (program === undefined) throw new TypeError('launchAgentProcess: empty argv')
	const tail = new StderrTail()
	let status: ChildExit | undefined
	const keeper =
		spec.outliveHost === undefined
			? undefined
			: startStderrLogKeeper(spec.outliveHost.stderrPath, spec.outliveHost.tailPath)
	const stderr = keeper?.input ?? 'pipe'
	let child: ChildProcess
	try {
		child = spawnAgentChild(spec, program, args, stderr)
	} finally {
		keeper?.release()
	}
	if (spec.outliveHost) child.unref()
	const pipes = pipesOf(child, spec.extraFds)
	const childExited = new Promise<ChildExit>((resolve) => {
		child.once('error', (error) => {
			// 'error' without a pid means spawn failed; with one, a later kill failed — exit still follows.
			if (child.pid === undefined) {
				status ??= { code: null, signal: null, error }
				resolve(status)
			}
		})
		child.once('exit', (code, signal) => {
			status ??= { code, signal }
			resolve(status)
		})
	})
	// The log of a kept-alive sandbox is written once it has ended: an exit report waits for it.
	const exited =
		keeper === undefined
			? childExited
			: childExited.then(async (exit) => {
					await keeper.flushed()
					return exit
				})
	child.stderr?.on('data', (chunk: Buffer) => tail.push(chunk))
	child.stderr?.on('error', () => undefined)
	let killing: Promise<void> | undefined
	const kill = async () => {
		const pid = child.pid
		let descendants: number[] = []
		if (pid !== undefined && status === undefined) {
			descendants = await descendantPids(pid)
			killQuietly(pid)
			for (const descendant of descendants) killQuietly(descendant)
		}
		await exited
		await waitUntilGone(descendants, KILL_WAIT_MS)
	}
	return {
		pid: child.pid,
		exited,
		pipes,
		exitStatus: () => status,
		stderrTail: () => {
			if (spec.outliveHost === undefined) return tail.read(spec.secrets)
			const fromFile = new StderrTail()
			fromFile.push(readFileTail(spec.outliveHost.stderrPath))
			return fromFile.read(spec.secrets)
		},
		kill: () => {
			killing ??= kill()
			return killing
		},
	}
}
