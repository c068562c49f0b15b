/**
 * `flush` `{ timeoutMs? }`: `sync -f` of the workspace
 * filesystem, bounded, answered `{ ok: true, durationMs, workspace }` or refused
 * (`flush_unsupported`, `flush_unsupported_platform`, `flush_invalid_timeout`,
 * `flush_unconfirmed` with the reason as `message`).
 */

import type { FlushReply } from '../../wire/lifecycle-ops.js'
import { AGENT_REFUSAL } from '../../wire/refusals.js'
import type { OpHandler } from '../handler/op-context.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { flushSupported, resolveFlushTimeoutMs, runFlush } from '../lifecycle/flush.js'

export const flush: OpHandler = async (body, ctx) => {
	if (process.platform !== 'linux') throw new OpRefusal(AGENT_REFUSAL.flush_unsupported_platform)
	const { lifecycle, workspace } = ctx.config
	const timeoutMs = resolveFlushTimeoutMs(body.timeoutMs, lifecycle.flushTimeoutMs)
	if (!flushSupported()) {
		throw new OpRefusal(AGENT_REFUSAL.flush_unsupported, 'no sync program is executable on PATH')
	}
	const { durationMs } = await runFlush({
		workspace,
		timeoutMs,
		...(lifecycle.flushCommand === undefined ? {} : { command: lifecycle.flushCommand }),
	})
	const reply: FlushReply = { ok: true, durationMs, workspace }
	ctx.reply(reply)
}
