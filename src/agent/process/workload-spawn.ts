/**
 * Starting workload code: the one place every command, terminal and detached session is spawned.
 * Always detached (its own process group and kernel session). With workload cgroups configured, the
 * child joins its groups BEFORE the program's first instruction: it is started as
 *
 *   /bin/sh -c '{ echo $$ >&3 && echo $$ >&4; } 2>&5 || exit 125; exec "$@" 3>&- 4>&- 5>&-' sh <cmd…>
 *
 * with `cgroup.procs` of the command's own group at 3 (the other groups after it) and a status pipe
 * last. A join that fails writes why into the status pipe and the program never runs; a join that
 * succeeds closes every one of those descriptors before the exec, so the program inherits none. The
 * shell is handed the caller's environment minus what a shell acts on at startup.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { Readable } from 'node:stream'
import { AGENT_REFUSAL } from '../../wire/refusals.js'
import type { CommandCgroup } from './command-cgroup.js'
import type { CommandUsage } from './command-usage.js'
import { lookupExecutable, probeExecutable, SpawnLookupError } from './executable-lookup.js'
import type { WorkloadCgroups } from './workload-cgroups.js'

/** Refusal code: the child could not join its groups, so the program never ran. */
export const WORKLOAD_CGROUP_JOIN_FAILED = AGENT_REFUSAL.workload_cgroup_join_failed

export const JOIN_SHELL = '/bin/sh'
/** The join prefix's own exit status when a join failed. */
export const JOIN_FAILED_EXIT_CODE = 125
const FIRST_JOIN_FD = 3
/** Bound on what the status pipe is read for (a shell's one-line complaint). */
const MAX_STATUS_CHARS = 1024

/** The shell's own pid into `cgroup.procs` at fds 3 … 3+count-1, in order (pure). */
export function joinWrites(count: number): string {
	const fds = Array.from({ length: count }, (_, index) => FIRST_JOIN_FD + index)
	return fds.length === 0 ? 'true' : fds.map((fd) => `echo $$ >&${fd}`).join(' && ')
}

/** The prefix script for `count` groups: fds 3 … 3+count-1, the status pipe right after (pure). */
export function joinScript(count: number): string {
	const status = FIRST_JOIN_FD + count
	const closes = Array.from({ length: count + 1 }, (_, index) => `${FIRST_JOIN_FD + index}>&-`)
	return `{ ${joinWrites(count)}; } 2>&${status} || exit ${JOIN_FAILED_EXIT_CODE}; exec "$@" ${closes.join(' ')}`
}

/**
 * Variables a shell may act on before its first command — a bash behind `/bin/sh` imports
 * functions (`BASH_FUNC_echo%%` would replace the join's `echo`) and options (`SHELLOPTS`, with
 * `PS4` run for every traced line) — so a caller's environment could run code outside the
 * command's groups. The join shell never sees them; nor, through it, does the program (dash
 * drops the `BASH_FUNC_…%%` names it cannot hold anyway).
 */
const SHELL_STARTUP_VARIABLES = new Set(['BASH_ENV', 'ENV', 'SHELLOPTS', 'BASHOPTS', 'PS4'])
const IMPORTED_FUNCTION_PREFIX = 'BASH_FUNC_'

/** `env` without what could run code in the join shell before it joined (pure). */
export function joinShellEnvironment(
	env: Readonly<Record<string, string>>,
): Record<string, string> {
	const kept: Record<string, string> = {}
	for (const [key, value] of Object.entries(env)) {
		if (SHELL_STARTUP_VARIABLES.has(key) || key.startsWith(IMPORTED_FUNCTION_PREFIX)) continue
		kept[key] = value
	}
	return kept
}

export interface WorkloadSpawnRequest {
	readonly command: string
	readonly args: readonly string[]
	readonly cwd: string
	readonly env: Record<string, string>
	readonly stdin: 'pipe' | 'ignore'
}

/**
 * The process tree a command started: its cgroup when it has one. Without one (no per-command
 * directory), `kill` confirms at once and the caller's process-group kill is all there is.
 */
export interface CommandTree {
	/** Whether the command has a group of its own. */
	readonly grouped: boolean
	/** Kills the whole group and gives it up (removed once empty); true once it is empty. */
	kill(timeoutMs: number): Promise<boolean>
	/** Every pid in the group now (`[]` without one). */
	members(): number[]
	/** What the tree used so far; undefined without a group or with accounting off. */
	usage(): CommandUsage | undefined
	/** The owner is done: the group is removed once it is empty. */
	release(): void
}

export interface WorkloadChild {
	readonly child: ChildProcess
	readonly tree: CommandTree
	/** Resolves once the join is decided: undefined when joined (or nothing to join), else why not. */
	readonly joinFailure: Promise<string | undefined>
}

const NO_TREE: CommandTree = {
	grouped: false,
	kill: () => Promise.resolve(true),
	members: () => [],
	usage: () => undefined,
	release: () => {},
}

/** The tree of a command in `group` (none without one). */
export function groupTree(cgroups: WorkloadCgroups, group: CommandCgroup | undefined): CommandTree {
	if (!group) return NO_TREE
	return {
		grouped: true,
		kill: async (timeoutMs) => {
			const empty = await group.kill(timeoutMs)
			cgroups.retire(group)
			return empty
		},
		members: () => {
			try {
				return group.members()
			} catch {
				return []
			}
		},
		usage: () => (cgroups.accounting ? group.usage() : undefined),
		release: () => cgroups.retire(group),
	}
}

/** What the join prefix wrote to its status pipe by the time it closed; undefined: joined. */
export function readJoinStatus(stream: Readable): Promise<string | undefined> {
	return new Promise((resolve) => {
		let text = ''
		stream.setEncoding('utf8')
		stream.on('data', (chunk: string) => {
			if (text.length < MAX_STATUS_CHARS) text += chunk.slice(0, MAX_STATUS_CHARS - text.length)
		})
		stream.on('error', () => undefined)
		stream.once('close', () => resolve(text === '' ? undefined : text.trim() || 'join failed'))
	})
}

/** Commands started ahead in their groups (`spare-command.ts`). */
export interface StartedAhead {
	/** One that now runs `request`; undefined when none waits or it cannot run this request. */
	take(request: WorkloadSpawnRequest): WorkloadChild | undefined
	/** `request` was spawned fresh as `child` instead. */
	spawnedFresh(child: ChildProcess): void
}

/**
 * Spawns `request` detached, joined to its groups when `cgroups` is given — or hands it to a
 * command started ahead, already joined. Throws synchronously when the program cannot be found
 * (`SpawnLookupError`, as Node's spawn would report it) or the groups cannot be prepared
 * (`OpRefusal` `workload_cgroup_unavailable`).
 */
export function spawnWorkload(
	cgroups: WorkloadCgroups | undefined,
	request: WorkloadSpawnRequest,
	ahead?: StartedAhead,
): WorkloadChild {
	const stdio: Array<'pipe' | 'ignore' | number> = [request.stdin, 'pipe', 'pipe']
	if (!cgroups) {
		const child = spawn(request.command, [...request.args], {
			cwd: request.cwd,
			env: request.env,
			detached: true,
			stdio,
		})
		return { child, tree: NO_TREE, joinFailure: Promise.resolve(undefined) }
	}
	const lookup = lookupExecutable(request.command, request.env.PATH, request.cwd, probeExecutable)
	if ('code' in lookup) throw new SpawnLookupError(request.command, lookup.code)
	const started = ahead?.take(request)
	if (started) return started
	const join = cgroups.prepare()
	const tree = groupTree(cgroups, join.group)
	let child: ChildProcess
	try {
		child = spawn(
			JOIN_SHELL,
			['-c', joinScript(join.procsFds.length), 'sh', request.command, ...request.args],
			{
				cwd: request.cwd,
				env: joinShellEnvironment(request.env),
				detached: true,
				stdio: [...stdio, ...join.procsFds, 'pipe'],
			},
		)
	} catch (error) {
		tree.release()
		throw error
	} finally {
		join.close()
	}
	if (child.pid === undefined) {
		// Nothing was started: the group is empty and goes at once.
		tree.release()
		return { child, tree: NO_TREE, joinFailure: Promise.resolve(undefined) }
	}
	ahead?.spawnedFresh(child)
	const status = child.stdio[FIRST_JOIN_FD + join.procsFds.length]
	const joinFailure =
		status instanceof Readable ? readJoinStatus(status) : Promise.resolve('no status pipe')
	return { child, tree, joinFailure }
}
