/**
 * Kernel sessions the agent started, for a quiesce narrowed to `owned-sessions`. Executions are
 * found through the execution registry and anything still descended from the agent through
 * `/proc`; work that outlives its leader in a session of its own (a detached session, say)
 * registers the session id here so a narrowed quiesce still reaches it after the leader is gone.
 */

const sessions = new Map<number, number>()

/** Registers `sessionId`; the returned function unregisters it (call once when the work ended). */
export function registerOwnedSession(sessionId: number): () => void {
	sessions.set(sessionId, (sessions.get(sessionId) ?? 0) + 1)
	let done = false
	return () => {
		if (done) return
		done = true
		const left = (sessions.get(sessionId) ?? 1) - 1
		if (left <= 0) sessions.delete(sessionId)
		else sessions.set(sessionId, left)
	}
}

export function registeredOwnedSessions(): number[] {
	return [...sessions.keys()]
}
