/**
 * The quiesce itself (I/O shell around quiesce-plan.ts): mark every running execution quiesced,
 * then rounds of scan `/proc` → SIGTERM → up to `graceMs` → SIGKILL what is left → up to the
 * settle bound, until a pass finds nothing. A process still present after SIGKILL, a quiesce that
 * runs out of rounds or of its deadline, rejects with `QuiesceUnconfirmed` naming a pid: it never
 * answers on an assumption. Used by the `quiesce` op and by the SIGTERM drain (shutdown.ts).
 */

import { readFileSync, readlinkSync } from 'node:fs'
import { pollUntil } from '../../common/poll-until.js'
import type { QuiescedProcess, QuiesceReply, QuiesceScope } from '../../wire/lifecycle-ops.js'
import { AGENT_REFUSAL } from '../../wire/refusals.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { readAllProcStats, readProcStat } from '../process/process-tree.js'
import type { QuiesceScopeSetting } from './lifecycle-config.js'
import { registeredOwnedSessions } from './owned-sessions.js'
import {
	decideQuiesceScope,
	isGone,
	ownedSessions,
	type ProcEntry,
	planQuiesceTargets,
	type QuiesceSelf,
	sessionsOfPids,
} from './quiesce-plan.js'

const MAX_COMMAND_CHARS = 256

/** `quiesce_unconfirmed`: `pid` outlived SIGKILL, or was still being found when time ran out. */
export class QuiesceUnconfirmed extends OpRefusal {
	override readonly name = 'QuiesceUnconfirmed'
	readonly pid: number

	constructor(pid: number, detail: string) {
		super(AGENT_REFUSAL.quiesce_unconfirmed, `process ${pid} ${detail}`)
		this.pid = pid
	}
}

export interface QuiesceRun {
	readonly graceMs: number
	readonly settleMs: number
	readonly maxRounds: number
	/** Bound on the whole run. */
	readonly deadlineMs: number
	readonly scope: QuiesceScopeSetting
	/** Marks running executions quiesced; answers their session (= group) ids. */
	readonly markExecutions: () => Iterable<number>
	/** Every pid in the agent's workload cgroups (none when the tier configured none). */
	readonly workloadMembers?: () => Iterable<number>
}

function readUid(pid: number): number | undefined {
	try {
		const match = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
		return match?.[1] === undefined ? undefined : Number(match[1])
	} catch {
		return undefined
	}
}

function readCommand(pid: number, comm: string): string {
	try {
		const raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim()
		const text = raw === '' ? comm : raw
		return text.length > MAX_COMMAND_CHARS ? `${text.slice(0, MAX_COMMAND_CHARS)}…` : text
	} catch {
		return comm
	}
}

/** Every visible process with what the plan needs (those vanishing mid-scan are skipped). */
export function readProcSnapshot(): ProcEntry[] {
	const entries: ProcEntry[] = []
	for (const stat of readAllProcStats()) {
		const uid = readUid(stat.pid)
		if (uid === undefined) continue
		entries.push({
			pid: stat.pid,
			ppid: stat.ppid,
			session: stat.session,
			state: stat.state,
			uid,
			command: stat.comm,
		})
	}
	return entries
}

/** Captured when the agent module loads (agent start), before any re-parenting can happen. */
const STARTUP_PARENT_PID = process.ppid

/** The kernel's fixed inode of the initial pid namespace (PROC_PID_INIT_INO). */
const INITIAL_PID_NAMESPACE = 'pid:[4026531836]'

function inInitialPidNamespace(): boolean {
	try {
		return readlinkSync('/proc/self/ns/pid') === INITIAL_PID_NAMESPACE
	} catch {
		// Unknown: assume the worst case, the host's own table.
		return true
	}
}

function readSelf(): QuiesceSelf {
	const stat = readProcStat(process.pid)
	return {
		pid: process.pid,
		ppid: STARTUP_PARENT_PID,
		session: stat?.session ?? -1,
		uid: process.getuid?.() ?? 0,
		inInitialPidNamespace: inInitialPidNamespace(),
	}
}

function signal(pid: number, name: NodeJS.Signals): void {
	try {
		process.kill(pid, name)
	} catch {
		// Gone already (ESRCH); or not ours after all (EPERM), which the next pass reports.
	}
}

/** Polls until none of `pids` is alive or `untilAt`; answers those still alive. */
async function waitGone(pids: readonly number[], untilAt: number): Promise<number[]> {
	let alive = [...pids]
	await pollUntil(() => {
		alive = alive.filter((pid) => !isGone(readProcStat(pid)))
		return alive.length === 0
	}, untilAt)
	return alive
}

export async function runQuiesce(run: QuiesceRun): Promise<QuiesceReply> {
	if (process.platform !== 'linux') throw new OpRefusal(AGENT_REFUSAL.quiesce_unsupported_platform)
	const startedAt = performance.now()
	const deadlineAt = startedAt + run.deadlineMs
	const self = readSelf()
	const scope: QuiesceScope = decideQuiesceScope(self, run.scope)
	// Marked before anything is signalled: a leader dying first must read as quiesced, not lost.
	const owned = new Set<number>(run.markExecutions())
	const stopped = new Map<number, QuiescedProcess>()
	for (let round = 1; ; round++) {
		const snapshot = readProcSnapshot()
		const registered = [
			...registeredOwnedSessions(),
			...sessionsOfPids(snapshot, run.workloadMembers?.() ?? []),
		]
		for (const session of ownedSessions(snapshot, self, registered)) owned.add(session)
		const targets = planQuiesceTargets(snapshot, self, scope, owned)
		const [first] = targets
		if (first === undefined) {
			return {
				ok: true,
				scope,
				graceMs: run.graceMs,
				rounds: round,
				stopped: [...stopped.values()],
			}
		}
		if (round > run.maxRounds) {
			throw new QuiesceUnconfirmed(
				first.pid,
				`was still running after ${run.maxRounds} rounds (NAMZU_AGENT_QUIESCE_MAX_ROUNDS)`,
			)
		}
		if (performance.now() >= deadlineAt) {
			throw new QuiesceUnconfirmed(
				first.pid,
				`was still running at the quiesce deadline of ${run.deadlineMs} ms`,
			)
		}
		for (const target of targets) {
			stopped.set(target.pid, {
				pid: target.pid,
				command: readCommand(target.pid, target.command),
				signal: 'SIGTERM',
			})
			signal(target.pid, 'SIGTERM')
		}
		const pids = targets.map((target) => target.pid)
		const graceEnd = Math.min(performance.now() + run.graceMs, deadlineAt)
		const survivors = await waitGone(pids, graceEnd)
		if (survivors.length === 0) continue
		for (const pid of survivors) {
			const entry = stopped.get(pid)
			if (entry) stopped.set(pid, { ...entry, signal: 'SIGKILL' })
			signal(pid, 'SIGKILL')
		}
		// SIGKILL cannot be refused; the settle bound only covers the kernel's teardown.
		const settleEnd = performance.now() + run.settleMs
		const [left] = await waitGone(survivors, settleEnd)
		if (left !== undefined) {
			throw new QuiesceUnconfirmed(
				left,
				`was still present ${run.settleMs} ms after SIGKILL (NAMZU_AGENT_QUIESCE_SETTLE_MS)`,
			)
		}
	}
}
