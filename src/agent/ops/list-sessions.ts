/**
 * `list-sessions` → `{ok: true, sessions: [summary]}` for every session the guest holds, running
 * or exited within its TTL. Never creates the registry: a guest never asked for a session answers
 * an empty list and holds nothing.
 */
import type { OpHandler } from '../handler/op-context.js'
import { existingSessionRegistry } from '../sessions/session-registry.js'

export const listSessions: OpHandler = (_body, ctx) => {
	const sessions = existingSessionRegistry()?.list() ?? []
	ctx.reply({ ok: true, sessions: sessions.map((session) => session.summary()) })
}
