/** The pure half of quiesce: scope, owned sessions, which pids a round signals, the drain split. */
import { describe, expect, it } from 'vitest'
import {
	decideQuiesceScope,
	drainBudget,
	ownedSessions,
	type ProcEntry,
	planQuiesceTargets,
	type QuiesceSelf,
} from '../../../src/agent/lifecycle/quiesce-plan.js'

function proc(pid: number, ppid: number, session: number, extra: Partial<ProcEntry> = {}) {
	return { pid, ppid, session, state: 'S', uid: 1000, command: `p${pid}`, ...extra }
}

const self: QuiesceSelf = { pid: 10, ppid: 1, session: 5, uid: 1000, inInitialPidNamespace: false }

/** A fake /proc: init, the agent (in session 5), a run it started, a setsid orphan, strangers. */
const snapshot: ProcEntry[] = [
	proc(1, 0, 1),
	proc(10, 1, 5),
	proc(11, 5, 5), // another process in the agent's own session
	proc(20, 10, 20), // an execution the agent spawned (detached: its own session)
	proc(21, 20, 20),
	proc(22, 20, 20, { state: 'Z' }),
	proc(30, 1, 30), // setsid'ed and reparented to init: not a descendant any more
	proc(40, 1, 40, { uid: 0 }), // another uid
	proc(50, 2, 0), // kernel pseudo-session 0
]

describe('decideQuiesceScope', () => {
	it.each([
		[{ pid: 1, ppid: 0, inInitialPidNamespace: false }, 'auto', 'pid-namespace'],
		[{ pid: 7, ppid: 1, inInitialPidNamespace: false }, 'auto', 'pid-namespace'],
		[{ pid: 7, ppid: 3, inInitialPidNamespace: false }, 'auto', 'owned-sessions'],
		[{ pid: 1, ppid: 0, inInitialPidNamespace: false }, 'owned-sessions', 'owned-sessions'],
		// A daemon started by the host's init must never scan the host's whole process table.
		[{ pid: 7, ppid: 1, inInitialPidNamespace: true }, 'auto', 'owned-sessions'],
	] as const)('scope for %o with setting %s is %s', (who, setting, expected) => {
		expect(decideQuiesceScope(who, setting)).toBe(expected)
	})
})

describe('ownedSessions', () => {
	it('collects the sessions of the agent descendants and registered ones, never its own or 0', () => {
		expect([...ownedSessions(snapshot, self, [77, 0, 5])].sort((a, b) => a - b)).toEqual([20, 77])
	})
})

describe('planQuiesceTargets', () => {
	it('the pid-namespace scope skips pid 1, the agent, its session, zombies, other uids and session 0', () => {
		const pids = planQuiesceTargets(snapshot, self, 'pid-namespace', new Set()).map((p) => p.pid)
		expect(pids).toEqual([20, 21, 30])
	})

	it('the owned-sessions scope reaches only sessions the agent owns', () => {
		const owned = ownedSessions(snapshot, self, [])
		const pids = planQuiesceTargets(snapshot, self, 'owned-sessions', owned).map((p) => p.pid)
		expect(pids).toEqual([20, 21])
	})

	it('a session remembered from an earlier round is still reached after its leader died', () => {
		const later = snapshot
			.filter((p) => p.pid !== 20)
			.map((p) => (p.pid === 21 ? proc(21, 1, 20) : p))
		const pids = planQuiesceTargets(later, self, 'owned-sessions', new Set([20])).map((p) => p.pid)
		expect(pids).toEqual([21])
	})

	it('a pass over a quiet guest plans nothing', () => {
		const quiet = [proc(1, 0, 1), proc(10, 1, 5)]
		expect(planQuiesceTargets(quiet, self, 'pid-namespace', new Set())).toEqual([])
	})
})

describe('drainBudget', () => {
	it.each([
		[15_000, 10_000, 10_000, 5000],
		[3000, 10_000, 2000, 1000],
		[30_000, 2000, 28_000, 2000],
	])(
		'deadline %i with flush timeout %i quiesces for %i and keeps %i for the flush',
		(deadline, flush, quiesceMs, reserve) => {
			expect(drainBudget(deadline, flush)).toEqual({ quiesceMs, flushReserveMs: reserve })
		},
	)
})
