/**
 * `kill-session {sessionId, signal?}`: sends the signal (allow-list SIGTERM / SIGKILL / SIGINT /
 * SIGHUP, anything else SIGTERM, default SIGKILL) to every process still in the session's kernel
 * session, waits up to `NAMZU_AGENT_SESSION_KILL_CONFIRM_TIMEOUT_MS` for the program to exit, and
 * answers `{ok: true, …summary, signalled}` — the summary says whether it did. A SIGKILL also
 * waits (within the same bound) until the program's whole cgroup is empty, when it has one. An
 * exited session answers its summary with `signalled: 0` (idempotent).
 */
import { settleWithin } from '../../common/bounded-promise.js'
import { AGENT_REFUSAL } from '../../wire/refusals.js'
import type { OpHandler } from '../handler/op-context.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { existingSessionRegistry } from '../sessions/session-registry.js'
import { parseKillSession } from '../sessions/session-request.js'

export const killSession: OpHandler = async (body, ctx) => {
	const spec = parseKillSession(body)
	const session = existingSessionRegistry()?.get(spec.sessionId)
	if (!session) throw new OpRefusal(AGENT_REFUSAL.unknown_session)
	const startedAt = performance.now()
	const signalled = session.kill(spec.signal)
	const timeoutMs = ctx.config.sessions.killConfirmTimeoutMs
	await session.whenExited(timeoutMs)
	if (spec.signal === 'SIGKILL' && session.program) {
		const left = Math.max(0, timeoutMs - (performance.now() - startedAt))
		await settleWithin(session.program.tornDown, left)
	}
	ctx.reply({ ok: true, ...session.summary(), signalled })
}
