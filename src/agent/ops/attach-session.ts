/**
 * `attach-session {sessionId, fromOffset?, follow?, cols?, rows?, heartbeatMs?}` (stream-shaped).
 * `follow` (default) attaches: `ready` with the session's fields, the replay from `fromOffset`,
 * live output, input and resize, then `exit` — and supersedes any previous attachment
 * (session-attachment.ts). `follow: false` is a read, not an attachment: one `output` event in
 * the BackgroundJobOutput shape (`chunk`, `nextOffset`, `droppedBytes`, `status`, `exitCode?`),
 * then the terminator; it displaces nobody and signals nothing. An offset beyond the end is
 * refused `invalid_offset` with the session's `nextOffset`.
 */
import { AGENT_REFUSAL } from '../../wire/refusals.js'
import type { SessionOutputEvent } from '../../wire/sessions.js'
import type { OpHandler } from '../handler/op-context.js'
import { OpRefusal } from '../handler/op-refusal.js'
import type { Session } from '../sessions/session.js'
import { SessionAttachment } from '../sessions/session-attachment.js'
import { existingSessionRegistry } from '../sessions/session-registry.js'
import { parseAttachSession } from '../sessions/session-request.js'

export function readSessionOutput(session: Session, fromOffset?: number): SessionOutputEvent {
	const read = session.log.read(fromOffset)
	const chunk = Buffer.concat(read.entries.map((entry) => entry.data)).toString('utf8')
	const summary = session.summary()
	return {
		type: 'output',
		sessionId: session.sessionId,
		chunk,
		fromOffset: read.fromOffset,
		nextOffset: read.nextOffset,
		droppedBytes: read.droppedBytes,
		status: session.status,
		...(summary.exitCode === undefined ? {} : { exitCode: summary.exitCode }),
		...(summary.signal === undefined ? {} : { signal: summary.signal }),
	}
}

export const attachSession: OpHandler = (body, ctx) => {
	const spec = parseAttachSession(body)
	const session = existingSessionRegistry()?.get(spec.sessionId)
	if (!session) throw new OpRefusal(AGENT_REFUSAL.unknown_session)
	if (spec.fromOffset !== undefined && spec.fromOffset > session.log.nextOffset) {
		ctx.send({
			type: 'error',
			error: AGENT_REFUSAL.invalid_offset,
			nextOffset: session.log.nextOffset,
		})
		ctx.endStream()
		return
	}
	if (!spec.follow) {
		ctx.send(readSessionOutput(session, spec.fromOffset))
		ctx.endStream()
		return
	}
	const attachment = new SessionAttachment(ctx, session)
	ctx.onFrame((message) => attachment.handle(message))
	attachment.start(spec.fromOffset, { ...(spec.size ? { size: spec.size } : {}), body })
}
