/**
 * What the agent does on SIGTERM: a bounded drain, so a stopping pod loses no written data.
 *
 * 1. Stop accepting and raise the quiesce gate for good (new work on open connections is refused).
 * 2. Quiesce — the same routine the `quiesce` op runs — within the shutdown deadline minus the flush
 *    reserve (min(flush timeout, deadline / 3)); then SIGKILL whatever the registries and the
 *    shutdown hooks (shutdown-hooks.ts) still own, in case the quiesce could not confirm, and kill
 *    every workload cgroup the agent holds (what commands left running in the background included),
 *    within the same part of the deadline.
 * 3. Flush the workspace with what is left of the deadline (at most the flush timeout).
 * 4. Exit 0. A watchdog exits 0 at the deadline whatever is still running.
 *
 * A repeated SIGTERM is logged and ignored: the drain keeps its original deadline. SIGINT and
 * SIGQUIT are not intercepted and end the agent at once. The agent may be pid 1 of its namespace,
 * where an unhandled SIGTERM would simply be ignored, so the handler always ends in `exit`.
 */
import type { Server } from 'node:net'
import type { ExecutionRegistry } from '../executions/execution-registry.js'
import type { AgentConfig } from '../handler/config.js'
import type { WorkloadCgroups } from '../process/workload-cgroups.js'
import type { AgentGates } from './agent-gates.js'
import { flushSupported, runFlush } from './flush.js'
import { runQuiesce } from './quiesce.js'
import { raiseQuiesceGateForever } from './quiesce-gate.js'
import { drainBudget } from './quiesce-plan.js'
import { runShutdownHooks } from './shutdown-hooks.js'

export interface ShutdownTargets {
	/** Undefined while the listener is still being bound. */
	readonly server: () => Server | undefined
	readonly executions: ExecutionRegistry
	readonly gates: AgentGates
	readonly config: AgentConfig
	/** The tier's workload cgroups, when it configured any. */
	readonly workloadCgroups?: WorkloadCgroups
	readonly exit: (code: number) => void
	readonly log: (line: string) => void
}

/** Time kept between the flush's own bound and the watchdog, for the orderly exit. */
const DRAIN_EXIT_MARGIN_MS = 50

function describe(error: unknown): string {
	return error instanceof Error ? error.message : String(error)
}

/** The SIGTERM handler: the first call drains, later calls are logged and ignored. */
export function createShutdown(targets: ShutdownTargets): () => void {
	let started = false
	return () => {
		if (started) {
			targets.log('SIGTERM received again during the shutdown drain; ignored')
			return
		}
		started = true
		void drain(targets)
	}
}

async function drain(targets: ShutdownTargets): Promise<void> {
	const { config, log } = targets
	const { lifecycle } = config
	const startedAt = performance.now()
	const deadlineMs = lifecycle.shutdownDeadlineMs
	const watchdog = setTimeout(() => {
		log(`shutdown drain hit its deadline of ${deadlineMs} ms (NAMZU_AGENT_SHUTDOWN_DEADLINE_MS)`)
		targets.exit(0)
	}, deadlineMs)
	targets.server()?.close()
	raiseQuiesceGateForever(targets.gates)
	const budget = drainBudget(deadlineMs, lifecycle.flushTimeoutMs)
	log(`SIGTERM: draining (quiesce ≤ ${budget.quiesceMs} ms, then flush)`)
	try {
		const report = await runQuiesce({
			graceMs: Math.min(lifecycle.quiesceGraceMs, Math.max(0, config.cancelConfirmTimeoutMs - 1)),
			settleMs: lifecycle.quiesceSettleMs,
			maxRounds: lifecycle.quiesceMaxRounds,
			deadlineMs: Math.min(budget.quiesceMs, lifecycle.quiesceDeadlineMs),
			scope: lifecycle.quiesceScope,
			markExecutions: () => targets.executions.markRunningQuiesced(),
			workloadMembers: () => targets.workloadCgroups?.memberPids() ?? [],
		})
		log(`shutdown quiesce (${report.scope}) stopped ${report.stopped.length} process(es)`)
	} catch (error) {
		log(`shutdown quiesce: ${describe(error)}`)
	}
	// Whatever the quiesce could not reach or confirm: what the agent itself owns dies now.
	targets.executions.killAll()
	runShutdownHooks()
	const groups = targets.workloadCgroups
	if (groups) {
		const quiesceLeft = budget.quiesceMs - (performance.now() - startedAt)
		const emptied = await groups.killAll(Math.max(0, quiesceLeft))
		if (!emptied) log('shutdown: a workload cgroup was still populated at its kill deadline')
	}
	const left = deadlineMs - (performance.now() - startedAt)
	// A little under what is left, so a flush that overruns is cut before the watchdog fires.
	const flushMs = Math.floor(Math.min(lifecycle.flushTimeoutMs, left - DRAIN_EXIT_MARGIN_MS))
	if (flushMs >= 1 && flushSupported()) {
		try {
			const { durationMs } = await runFlush({
				workspace: config.workspace,
				timeoutMs: flushMs,
				...(lifecycle.flushCommand === undefined ? {} : { command: lifecycle.flushCommand }),
			})
			log(`shutdown flush took ${durationMs} ms`)
		} catch (error) {
			log(`shutdown flush: ${describe(error)}`)
		}
	}
	clearTimeout(watchdog)
	targets.exit(0)
}
