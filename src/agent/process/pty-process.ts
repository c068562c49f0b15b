/**
 * The PTY half of a terminal, shared by the connection-bound `terminal` and persistent terminal
 * sessions: finding the shell util-linux `script` started on the PTY slave, sizing the PTY with
 * `stty`, and the one-shot teardown that SIGKILLs the shell's whole kernel session plus `script`'s
 * own group (a job backgrounded with `&` is in the shell's session, not in any group we spawned)
 * and, with workload cgroups, the terminal's whole cgroup (a `setsid` job is in neither).
 */

import type { ChildProcess } from 'node:child_process'
import { spawn } from 'node:child_process'
import { statSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import { resolveWorkspaceDirectory } from '../files/jail.js'
import type { AgentConfig } from '../handler/config.js'
import type { OpContext } from '../handler/op-context.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { childEnvironment } from './child-env.js'
import { findPtyDescendant, readChildren, readProcStat } from './process-tree.js'
import { SessionTeardown } from './session-teardown.js'
import {
	SCRIPT_PATH,
	STTY_PATH,
	scriptArgv,
	sttyArgv,
	type TerminalSize,
	type TerminalSpec,
} from './terminal-request.js'
import type { WorkloadCgroups } from './workload-cgroups.js'
import { spawnWorkload, WORKLOAD_CGROUP_JOIN_FAILED } from './workload-spawn.js'

/** How long the PTY slave may take to appear under `script`: attempts × interval. */
export const SLAVE_SEARCH_ATTEMPTS = 200
export const SLAVE_SEARCH_INTERVAL_MS = 5

export interface Exit {
	readonly code: number | null
	readonly signal: NodeJS.Signals | null
}

export interface PtyShell {
	readonly pid: number
	readonly slave: string
}

export interface SlaveSearch {
	readonly shell?: PtyShell
	/** script exited before a PTY slave was seen. */
	readonly exited: boolean
}

export function isDirectory(path: string): boolean {
	try {
		return statSync(path).isDirectory()
	} catch {
		return false
	}
}

export function slaveSearchFailure(pid: number | undefined): string {
	return `terminal PTY slave did not appear (${SLAVE_SEARCH_ATTEMPTS} attempts × ${SLAVE_SEARCH_INTERVAL_MS} ms under script pid ${pid ?? 'none'})`
}

export async function findSlave(
	child: ChildProcess,
	teardown: SessionTeardown,
): Promise<SlaveSearch> {
	const root = child.pid
	if (root === undefined) return { exited: true }
	for (let attempt = 0; attempt < SLAVE_SEARCH_ATTEMPTS; attempt++) {
		// script's child calls setsid(), so its pid is the session id to tear down — known as soon
		// as it is forked, even if it exits before a PTY is seen.
		const [first] = readChildren(root)
		if (first !== undefined) teardown.session ??= first
		const shell = findPtyDescendant(root)
		if (shell) {
			teardown.session = readProcStat(shell.pid)?.session ?? teardown.session
			return { shell, exited: false }
		}
		if (child.exitCode !== null || child.signalCode !== null) return { exited: true }
		await sleep(SLAVE_SEARCH_INTERVAL_MS)
	}
	return { exited: false }
}

/** Sets the PTY size; failures are ignored (the terminal still works at the old size). */
export function runStty(
	slave: string,
	size: TerminalSize,
	env: Record<string, string>,
): Promise<void> {
	return new Promise((resolve) => {
		const stty = spawn(STTY_PATH, sttyArgv(slave, size), { env, stdio: 'ignore' })
		stty.once('error', () => resolve())
		stty.once('exit', () => resolve())
	})
}

/** Where and with what environment a terminal program runs: the jailed cwd and the scrubbed env. */
export interface PtyLaunch {
	readonly cwd: string
	/** Scrubbed of every NAMZU_* key; the caller's env wins, TERM included. stty gets the same. */
	readonly env: Record<string, string>
}

/** Resolves a terminal request's cwd (jailed, must be a directory) and environment. */
export function planPtyLaunch(
	config: Pick<AgentConfig, 'workspace' | 'readRoots' | 'writeRoots'>,
	spec: TerminalSpec,
): PtyLaunch {
	const cwd = resolveWorkspaceDirectory(config, spec.cwd)
	if (!isDirectory(cwd))
		throw new OpRefusal(
			formatRefusal(AGENT_REFUSAL.invalid_cwd, `not a directory: ${spec.cwd ?? cwd}`),
		)
	return { cwd, env: childEnvironment(spec.env, { TERM: 'xterm-256color' }) }
}

/**
 * Starts util-linux `script` (its own process group; with workload cgroups, in a cgroup of its own
 * joined before it runs) running the program on a fresh PTY. Throws the refusal when the cgroup
 * cannot be made.
 */
export function spawnScriptPty(
	spec: TerminalSpec,
	launch: PtyLaunch,
	cgroups: WorkloadCgroups | undefined,
	treeKillMs: number,
): ScriptPty {
	const { child, tree, joinFailure } = spawnWorkload(cgroups, {
		command: SCRIPT_PATH,
		args: scriptArgv(spec.command, spec.args),
		cwd: launch.cwd,
		env: launch.env,
		stdin: 'pipe',
	})
	const joinError = joinFailure.then((text) =>
		text === undefined ? undefined : new Error(formatRefusal(WORKLOAD_CGROUP_JOIN_FAILED, text)),
	)
	const failure = new Promise<Error>((resolve) => {
		child.once('error', resolve)
		void joinError.then((error) => {
			if (error) resolve(error)
		})
	})
	return { child, teardown: new SessionTeardown(child, tree, treeKillMs), failure, joinError }
}

export interface ScriptPty {
	readonly child: ChildProcess
	readonly teardown: SessionTeardown
	/** `script` could not be started, or could not join its cgroup. */
	readonly failure: Promise<Error>
	/** Resolves once the join is decided: the error when it failed. */
	readonly joinError: Promise<Error | undefined>
}

/**
 * Finds the PTY shell, or the reason there is none: a spawn or join failure (a `script` that exited
 * before any PTY because it never joined its cgroup reports the join, not an early exit).
 */
export async function searchScriptPty(pty: ScriptPty): Promise<SlaveSearch | Error> {
	const search = await Promise.race([findSlave(pty.child, pty.teardown), pty.failure])
	if (search instanceof Error || search.shell !== undefined || !search.exited) return search
	return (await pty.joinError) ?? search
}

/**
 * A terminal whose search found no shell to drive (a spawn or join failure, or no PTY slave in
 * time): torn down, and a caller still connected told why.
 */
export async function failTerminalStart(
	pty: ScriptPty,
	search: SlaveSearch | Error,
	ctx: Pick<OpContext, 'closed' | 'send' | 'endStream'>,
): Promise<void> {
	pty.teardown.run()
	await pty.teardown.finished
	if (!ctx.closed) {
		ctx.send({
			type: 'error',
			error: search instanceof Error ? search.message : slaveSearchFailure(pty.child.pid),
		})
		ctx.endStream()
	}
}
