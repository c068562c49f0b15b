/**
 * What the agent does on SIGTERM (changelog 437e3d3): stop accepting, SIGKILL every running
 * execution's process group (they are detached, so they would outlive us) and whatever other work
 * registered a shutdown hook (shutdown-hooks.ts), and exit 0 at once —
 * the agent may be pid 1 of its pid namespace, where an unhandled SIGTERM is simply ignored. This
 * is deliberately not a drain: in-flight callers see their connection drop.
 *
 * Seam: a bounded drain (quiesce the workload, flush the workspace, exit by a deadline — upstream
 * shapes §3.8) belongs between closing the listener and `exit`; a repeated SIGTERM is ignored.
 */
import type { Server } from 'node:net'
import type { ExecutionRegistry } from './execution-registry.js'
import { runShutdownHooks } from './shutdown-hooks.js'

export interface ShutdownTargets {
	/** Undefined while the listener is still being bound. */
	readonly server: () => Server | undefined
	readonly executions: ExecutionRegistry
	readonly exit: (code: number) => void
}

export function createShutdown(targets: ShutdownTargets): () => void {
	let started = false
	return () => {
		if (started) return
		started = true
		targets.server()?.close()
		targets.executions.killAll()
		runShutdownHooks()
		targets.exit(0)
	}
}
