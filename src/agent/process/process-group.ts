/**
 * Signalling and watching a process group the agent owns. Every command is spawned detached, so its
 * pid is also its group id and the group (the command and every child it did not move elsewhere) is
 * the unit signalled — never just the leader. Liveness ignores zombies: a killed grandchild that was
 * reparented to a slow-reaping pid 1 is dead for every purpose a caller cares about.
 *
 * `terminateProcessGroup` is the cancellation sequence of the README's "SIGTERM → SIGKILL grace
 * window": SIGTERM the group, wait up to the grace window for it to go quiet, SIGKILL it if anything
 * is still alive, then wait up to the confirm timeout for it to be gone.
 */
import { pollUntil } from '../../common/poll-until.js'
import { isDeadState } from '../../common/proc-stat.js'
import { type ProcStat, readAllProcStats } from './process-tree.js'

function errorCode(error: unknown): string | undefined {
	if (error instanceof Error && 'code' in error && typeof error.code === 'string') return error.code
	return undefined
}

/** Sends `signal` to every member of the group; false when the group no longer exists. */
export function signalProcessGroup(pgid: number, signal: NodeJS.Signals): boolean {
	try {
		process.kill(-pgid, signal)
		return true
	} catch (error) {
		if (errorCode(error) === 'ESRCH') return false
		throw error
	}
}

/** Non-zombie members of the group, from a /proc scan; undefined when /proc cannot be read. */
function liveMembersFromProc(pgid: number): number | undefined {
	let stats: ProcStat[]
	try {
		stats = readAllProcStats()
	} catch {
		return undefined
	}
	return stats.filter((stat) => stat.pgrp === pgid && !isDeadState(stat.state)).length
}

/** Whether any non-zombie process is still in the group. */
export function isProcessGroupAlive(pgid: number): boolean {
	try {
		process.kill(-pgid, 0)
	} catch (error) {
		const code = errorCode(error)
		if (code === 'ESRCH') return false
		if (code !== 'EPERM') throw error
	}
	const live = liveMembersFromProc(pgid)
	return live === undefined ? true : live > 0
}

/** Polls until the group is gone or `timeoutMs` passed; true when it is gone. */
export async function waitForProcessGroupExit(pgid: number, timeoutMs: number): Promise<boolean> {
	return pollUntil(() => !isProcessGroupAlive(pgid), performance.now() + timeoutMs)
}

export interface TerminateOptions {
	/** How long the group may take to go quiet after SIGTERM before it is SIGKILLed. */
	readonly graceMs: number
	/** How long after SIGKILL the group may take to disappear before we give up. */
	readonly confirmTimeoutMs: number
}

export type TerminateOutcome = 'exited-on-sigterm' | 'killed' | 'unconfirmed'

/** SIGTERM → grace → SIGKILL → confirm, on the whole group. */
export async function terminateProcessGroup(
	pgid: number,
	options: TerminateOptions,
): Promise<TerminateOutcome> {
	if (!signalProcessGroup(pgid, 'SIGTERM')) return 'exited-on-sigterm'
	if (await waitForProcessGroupExit(pgid, options.graceMs)) return 'exited-on-sigterm'
	signalProcessGroup(pgid, 'SIGKILL')
	return (await waitForProcessGroupExit(pgid, options.confirmTimeoutMs)) ? 'killed' : 'unconfirmed'
}
