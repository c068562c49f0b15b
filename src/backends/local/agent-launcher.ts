/**
 * Starts the agent's process (bwrap, or plain node under isolation 'none') and owns it until it is
 * dead: stderr is drained into a tail for failure reports, and `kill()` SIGKILLs and awaits exit.
 */
import { spawn } from 'node:child_process'
import { descendantPids, waitUntilGone } from './process-tree.js'
import { StderrTail } from './stderr-tail.js'

export interface AgentLaunchSpec {
	/** Program first. */
	readonly argv: readonly string[]
	readonly env: Readonly<Record<string, string>>
	readonly cwd: string
	/** Values masked in the stderr tail. */
	readonly secrets: readonly string[]
	/** Listening socket descriptor handed to the child as fd 3. */
	readonly listenFd?: number
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

export function launchAgentProcess(spec: AgentLaunchSpec): LaunchedAgentProcess {
	const [program, ...args] = spec.argv
	if (program === undefined) throw new TypeError('launchAgentProcess: empty argv')
	const tail = new StderrTail()
	let status: ChildExit | undefined
	const child = spawn(program, args, {
		// Its own process group: a terminal's Ctrl-C is for the host program, which cancels through
		// the AbortSignal; it must not kill the sandbox out from under that cancellation.
		detached: true,
		cwd: spec.cwd,
		env: { ...spec.env },
		stdio:
			spec.listenFd === undefined
				? ['ignore', 'ignore', 'pipe']
				: ['ignore', 'ignore', 'pipe', spec.listenFd],
	})
	const exited = new Promise<ChildExit>((resolve) => {
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
		exitStatus: () => status,
		stderrTail: () => tail.read(spec.secrets),
		kill: () => {
			killing ??= kill()
			return killing
		},
	}
}
