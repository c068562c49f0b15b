/**
 * What a quiesce stops, decided over a `/proc` snapshot (pure; quiesce.ts does the I/O). Never
 * PID 1, never the agent, never anything in the agent's own kernel session or the kernel's
 * pseudo-session 0, never a zombie, never another uid's process. In `owned-sessions` scope only
 * processes in a session the agent started are candidates: sessions of the agent's current
 * descendants plus sessions its registries name (an execution's group is its session: every
 * command is spawned detached) plus the sessions of every process in the agent's workload cgroups
 * (a `setsid` descendant, or one a finished command left behind, is in no other).
 */
import { isDeadState } from '../../common/proc-stat.js'
import type { QuiesceScope } from '../../wire/lifecycle-ops.js'
import type { QuiesceScopeSetting } from './lifecycle-config.js'

export interface ProcEntry {
	readonly pid: number
	readonly ppid: number
	readonly session: number
	/** One-letter state (`R`, `S`, `Z`, …). */
	readonly state: string
	readonly uid: number
	readonly command: string
}

export interface QuiesceSelf {
	readonly pid: number
	/** The parent the agent was STARTED by (an orphan re-parented to init later does not count). */
	readonly ppid: number
	readonly session: number
	readonly uid: number
	/** Whether the agent runs in the machine's initial pid namespace (the host's own table). */
	readonly inInitialPidNamespace: boolean
}

/**
 * The full pid-namespace scan only when the agent is the namespace's init or was started by it
 * (the shape `tini` → agent gives it), and never in the machine's initial pid namespace: there
 * "started by init" means a host daemon, and the namespace is the host's whole process table.
 */
export function decideQuiesceScope(
	self: Pick<QuiesceSelf, 'pid' | 'ppid' | 'inInitialPidNamespace'>,
	setting: QuiesceScopeSetting,
): QuiesceScope {
	if (setting === 'owned-sessions' || self.inInitialPidNamespace) return 'owned-sessions'
	return self.pid === 1 || self.ppid === 1 ? 'pid-namespace' : 'owned-sessions'
}

export function isGone(entry: Pick<ProcEntry, 'state'> | undefined): boolean {
	return entry === undefined || isDeadState(entry.state)
}

/** Sessions of every descendant of the agent, plus `registered`, minus the agent's own. */
export function ownedSessions(
	snapshot: readonly ProcEntry[],
	self: Pick<QuiesceSelf, 'pid' | 'session'>,
	registered: Iterable<number>,
): Set<number> {
	const children = new Map<number, ProcEntry[]>()
	for (const entry of snapshot) {
		const list = children.get(entry.ppid) ?? []
		list.push(entry)
		children.set(entry.ppid, list)
	}
	const owned = new Set<number>(registered)
	const queue = [...(children.get(self.pid) ?? [])]
	const seen = new Set<number>()
	for (let entry = queue.shift(); entry !== undefined; entry = queue.shift()) {
		if (seen.has(entry.pid)) continue
		seen.add(entry.pid)
		owned.add(entry.session)
		queue.push(...(children.get(entry.pid) ?? []))
	}
	owned.delete(self.session)
	owned.delete(0)
	return owned
}

/** The kernel sessions `pids` are in, as the snapshot shows them. */
export function sessionsOfPids(
	snapshot: readonly ProcEntry[],
	pids: Iterable<number>,
): Set<number> {
	const wanted = new Set(pids)
	const sessions = new Set<number>()
	for (const entry of snapshot) if (wanted.has(entry.pid)) sessions.add(entry.session)
	return sessions
}

/** The processes one quiesce round signals, in pid order. */
export function planQuiesceTargets(
	snapshot: readonly ProcEntry[],
	self: QuiesceSelf,
	scope: QuiesceScope,
	owned: ReadonlySet<number>,
): ProcEntry[] {
	return snapshot
		.filter(
			(entry) =>
				entry.pid !== 1 &&
				entry.pid !== self.pid &&
				entry.session !== self.session &&
				entry.session !== 0 &&
				!isGone(entry) &&
				entry.uid === self.uid &&
				(scope === 'pid-namespace' || owned.has(entry.session)),
		)
		.sort((a, b) => a.pid - b.pid)
}

/**
 * The SIGTERM-drain split: the flush keeps min(flush timeout, deadline / 3), so a quiesce that runs
 * long can never leave the workspace unflushed.
 */
export function drainBudget(
	deadlineMs: number,
	flushTimeoutMs: number,
): { readonly quiesceMs: number; readonly flushReserveMs: number } {
	const flushReserveMs = Math.min(flushTimeoutMs, Math.floor(deadlineMs / 3))
	return { quiesceMs: deadlineMs - flushReserveMs, flushReserveMs }
}
