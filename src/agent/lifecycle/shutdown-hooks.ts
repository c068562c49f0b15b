/**
 * Process-wide list of synchronous "kill what you own" hooks run on agent shutdown (SIGTERM), for
 * work outside the execution registry — e.g. terminal shells, which are detached and would outlive
 * the agent because `process.exit` fires no socket `close` events. A hook must be quick and
 * synchronous (send SIGKILL, do not wait); a throwing hook does not stop the others.
 */

const hooks = new Set<() => void>()

/** Registers `hook`; the returned function unregisters it (call it once the work ended normally). */
export function registerShutdownHook(hook: () => void): () => void {
	hooks.add(hook)
	return () => {
		hooks.delete(hook)
	}
}

/** Runs every registered hook once; returns how many threw. */
export function runShutdownHooks(): number {
	let failures = 0
	for (const hook of [...hooks]) {
		hooks.delete(hook)
		try {
			hook()
		} catch {
			failures++
		}
	}
	return failures
}
