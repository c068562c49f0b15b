/**
 * Signalling a whole kernel session for `kill-session`: `SIGKILL` goes through `killSession`
 * (repeated passes, since a dying shell can fork); any other allow-listed signal is sent once to
 * every process still in the session, so a job backgrounded with `&` gets it too and decides for
 * itself. A process that called `setsid` for itself has left the session; with workload cgroups the
 * caller names the program's cgroup members too (`alsoPids`), so it is reached all the same.
 */
import type { SessionSignal } from '../../wire/sessions.js'
import {
	killSession,
	pidsInSession,
	readAllProcStats,
	readProcStat,
} from '../process/process-tree.js'

/** Sends `signal` to every process in kernel session `session` and `alsoPids`, once each. */
export function signalKernelSession(
	session: number,
	signal: SessionSignal,
	alsoPids: readonly number[] = [],
): number {
	if (signal === 'SIGKILL') return killSession(session)
	// Never the agent's own session, nor the kernel's pseudo-session 0.
	if (session <= 1 || session === readProcStat(process.pid)?.session) return 0
	const targets = new Set(pidsInSession(readAllProcStats(), session, new Set([process.pid])))
	for (const pid of alsoPids) if (pid !== process.pid) targets.add(pid)
	let signalled = 0
	for (const pid of targets) {
		try {
			process.kill(pid, signal)
			signalled++
		} catch {
			// Already gone.
		}
	}
	return signalled
}
