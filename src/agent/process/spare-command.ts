/**
 * The next command started ahead: a shell already in a group of its own, waiting for its command.
 *
 * The slow part of a command's start is not the spawn but joining its groups: after a quiet spell
 * the kernel's first write to a `cgroup.procs` waits for an RCU grace period (5–20 ms), every time
 * the machine was idle for a few tens of milliseconds. A spare pays that ahead — at agent start and
 * after each command it served — so the command that takes it only writes one line to it (and
 * starts the lock warming, `WorkloadCgroups.warmMigration`, so the refill after it joins warm):
 *
 *   <join prefix, as workload-spawn.ts>; exec 3>&- …; IFS= read -r L <&C || exit 125; eval "$L"
 *
 * The line (`spareCommandLine`) changes directory, turns the shell's environment into the
 * command's (what the join shell of a fresh spawn would hand it, `PWD` included), and `exec`s the
 * program with the same `"$@"` a fresh spawn uses. A request the line cannot carry exactly (a
 * newline anywhere, a `PWD` that is not the directory, a line past `MAX_LINE_BYTES`, stdin not a
 * pipe) takes the fresh spawn. Nothing isolates less: the spare is in its command's groups before
 * it reads a byte (the whole tree ends with the group; what it used is counted there), it holds
 * none of the groups' descriptors once joined, and the tier runs it through a copy of the shell
 * the workload cannot read (`NAMZU_AGENT_SPARE_SHELL`), so it is not dumpable: no workload process
 * can trace it or take its descriptors to write a command of its own into it. While it waits it
 * holds one of the workload's process slots; one is refilled only after the command that took the
 * last one ended, so a command started from a spare has the whole limit to itself.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { Readable, Writable } from 'node:stream'
import { childEnvironment } from './child-env.js'
import type { WorkloadCgroups } from './workload-cgroups.js'
import {
	groupTree,
	JOIN_FAILED_EXIT_CODE,
	joinShellEnvironment,
	joinWrites,
	readJoinStatus,
	type WorkloadChild,
	type WorkloadSpawnRequest,
} from './workload-spawn.js'

/** The longest line a spare is handed; dash reads it a byte per system call. */
export const MAX_LINE_BYTES = 4096
/** Spares that failed to start in a row before the agent stops starting them. */
const MAX_FAILURES = 3
/** The shell variable the line is read into (the `NAMZU_AGENT_` prefix never reaches a child). */
const LINE_VARIABLE = 'NAMZU_AGENT_SPARE_LINE'
/** A newline, set by the script, so a line can carry one (`'a'"$NAMZU_AGENT_NL"'b'`). */
const NEWLINE_VARIABLE = 'NAMZU_AGENT_NL'
const FIRST_JOIN_FD = 3
const SHELL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/
/** How long a discarded spare's group is given to empty. */
const DISCARD_KILL_MS = 1_000

/** The spare's script for `count` groups: join, close, wait for one line, run it (pure). */
export function spareScript(count: number): string {
	const status = FIRST_JOIN_FD + count
	const control = status + 1
	const closes = Array.from({ length: count + 1 }, (_, index) => `${FIRST_JOIN_FD + index}>&-`)
	return [
		`${NEWLINE_VARIABLE}='\n'`,
		`{ ${joinWrites(count)}; } 2>&${status} || exit ${JOIN_FAILED_EXIT_CODE}`,
		`exec ${closes.join(' ')}`,
		`IFS= read -r ${LINE_VARIABLE} <&${control} || exit ${JOIN_FAILED_EXIT_CODE}`,
		`eval "$${LINE_VARIABLE}"`,
	].join('; ')
}

/** One shell word of `value`; its newlines come from the script's variable, outside the quotes. */
function quote(value: string): string {
	const quoted = `'${value.replaceAll("'", `'\\''`)}'`
	return quoted.replaceAll('\n', `'"$${NEWLINE_VARIABLE}"'`)
}

export interface SpareLineInput {
	readonly command: string
	readonly args: readonly string[]
	readonly cwd: string
	/** The environment the program must get (already without the shell's startup variables). */
	readonly env: Readonly<Record<string, string>>
	/** The environment the spare's shell was started with. */
	readonly spareEnv: Readonly<Record<string, string>>
	/** The spare's control descriptor, closed at the `exec`. */
	readonly controlFd: number
}

/**
 * The one line that turns a waiting spare into `input`'s command; undefined when a line cannot
 * carry it exactly (pure). A shell drops variables whose names it cannot hold, from both paths.
 * Every word is expanded before the environment changes, so no value of the caller's can alter
 * one.
 */
export function spareCommandLine(input: SpareLineInput): string | undefined {
	const { env, spareEnv, cwd } = input
	// A fresh join shell keeps a PWD that names its directory, else sets the physical path.
	if (env.PWD !== undefined && env.PWD !== cwd) return undefined
	const steps = [`cd ${env.PWD === undefined ? '-P' : '-L'} -- ${quote(cwd)}`]
	steps.push(`set -- ${[input.command, ...input.args].map(quote).join(' ')}`)
	const unset = Object.keys(spareEnv).filter((key) => SHELL_NAME.test(key) && !(key in env))
	// `cd` exports OLDPWD; a fresh shell has one only when the environment does.
	steps.push(`unset OLDPWD ${unset.join(' ')}`.trimEnd())
	const exports = Object.entries(env)
		.filter(([key, value]) => SHELL_NAME.test(key) && key !== 'PWD' && spareEnv[key] !== value)
		.map(([key, value]) => `${key}=${quote(value)}`)
	if (exports.length > 0) steps.push(`export ${exports.join(' ')}`)
	steps.push(`exec "$@" ${input.controlFd}<&-`)
	const line = `${steps.join(' && ')}\n`
	return Buffer.byteLength(line) > MAX_LINE_BYTES ? undefined : line
}

interface Spare {
	readonly child: ChildProcess
	readonly control: Writable
	readonly controlFd: number
	readonly started: WorkloadChild
	readonly onIdleExit: () => void
}

export interface SpareCommandsOptions {
	/** A shell the workload cannot read (so the spare is not dumpable). */
	readonly shell: string
	/** Where spares wait (outside the workspace); each changes to its command's directory. */
	readonly cwd: string
}

/** At most one spare, taken by the next `execute` that can use it, refilled after it ran. */
export class SpareCommands {
	readonly #cgroups: WorkloadCgroups
	readonly #options: SpareCommandsOptions
	readonly #env: Record<string, string>
	#spare: Spare | undefined
	#failures = 0
	#closed = false

	constructor(cgroups: WorkloadCgroups, options: SpareCommandsOptions) {
		this.#cgroups = cgroups
		this.#options = options
		const env = joinShellEnvironment(childEnvironment(undefined))
		// The line sets both; a spare started with them would carry the agent's values.
		delete env.PWD
		delete env.OLDPWD
		this.#env = env
	}

	/** Whether a spare is waiting (for tests and the bench). */
	get waiting(): boolean {
		return this.#spare !== undefined
	}

	/** Starts a spare unless one waits, the agent is stopping, or spares kept failing. */
	fill(): void {
		if (this.#closed || this.#spare || this.#failures >= MAX_FAILURES) return
		try {
			this.#spare = this.#start()
		} catch {
			this.#failures++
		}
	}

	/**
	 * The waiting spare running `request`; undefined when none waits or the request needs a fresh
	 * spawn. The program was looked up already.
	 */
	take(request: WorkloadSpawnRequest): WorkloadChild | undefined {
		const spare = this.#spare
		if (!spare || request.stdin !== 'pipe') return undefined
		if (spare.child.exitCode !== null || spare.child.signalCode !== null) {
			spare.onIdleExit()
			return undefined
		}
		const line = spareCommandLine({
			command: request.command,
			args: request.args,
			cwd: request.cwd,
			env: joinShellEnvironment(request.env),
			spareEnv: this.#env,
			controlFd: spare.controlFd,
		})
		if (line === undefined) {
			// Spawned fresh instead: the spare gives its process slot back first.
			this.#discard()
			return undefined
		}
		this.#spare = undefined
		spare.child.off('exit', spare.onIdleExit)
		// Before the line: the spare is alive (waiting) when the thread-pool write looks it up.
		if (spare.child.pid !== undefined) this.#cgroups.warmMigration(spare.child.pid)
		spare.control.end(line)
		// Refilled once this command is over, after its result went out.
		spare.child.once('close', () => setImmediate(() => this.fill()))
		return spare.started
	}

	/** A command was spawned fresh: a spare is started again once it is over. */
	spawnedFresh(child: ChildProcess): void {
		child.once('close', () => setImmediate(() => this.fill()))
	}

	/** No more spares (agent shutdown); the waiting one is killed with its group. */
	close(): void {
		this.#closed = true
		this.#discard()
	}

	#discard(): void {
		const spare = this.#spare
		this.#spare = undefined
		if (!spare) return
		spare.child.off('exit', spare.onIdleExit)
		void spare.started.tree.kill(DISCARD_KILL_MS)
	}

	#start(): Spare {
		const join = this.#cgroups.prepare()
		const tree = groupTree(this.#cgroups, join.group)
		const count = join.procsFds.length
		let child: ChildProcess
		try {
			child = spawn(this.#options.shell, ['-c', spareScript(count)], {
				cwd: this.#options.cwd,
				env: this.#env,
				detached: true,
				stdio: ['pipe', 'pipe', 'pipe', ...join.procsFds, 'pipe', 'pipe'],
			})
		} catch (error) {
			tree.release()
			throw error
		} finally {
			join.close()
		}
		const status = child.stdio[FIRST_JOIN_FD + count]
		const control = child.stdio[FIRST_JOIN_FD + count + 1]
		if (
			child.pid === undefined ||
			!(status instanceof Readable) ||
			!(control instanceof Writable)
		) {
			child.on('error', () => undefined)
			tree.release()
			throw new Error('the spare did not start')
		}
		for (const stream of child.stdio) stream?.on('error', () => undefined)
		// Read, so its end is seen and the child's 'close' can fire once the program exec'd.
		if (control instanceof Readable) control.resume()
		const joinFailure = readJoinStatus(status)
		const started: WorkloadChild = { child, tree, joinFailure }
		const onIdleExit = () => {
			if (this.#spare?.child !== child) return
			this.#spare = undefined
			this.#failures++
			for (const stream of child.stdio) stream?.destroy()
			tree.release()
		}
		child.once('exit', onIdleExit)
		// A spare that joined counts as a success; one that could not join is given up.
		void joinFailure.then((failure) => {
			if (failure === undefined) this.#failures = 0
		})
		return { child, control, controlFd: FIRST_JOIN_FD + count + 1, started, onIdleExit }
	}
}
