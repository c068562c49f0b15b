/**
 * `quiesce` `{ graceMs? }`: stops every guest process the
 * scope reaches and keeps the agent serving. The quiesce gate is held for the duration, so new work
 * is refused with `quiesce_in_progress` meanwhile. A process that outlives SIGKILL answers
 * `{ ok: false, error: 'quiesce_unconfirmed', message, pid }` — never an optimistic success.
 */

import type { QuiesceUnconfirmedReply } from '../../wire/lifecycle-ops.js'
import { AGENT_REFUSAL } from '../../wire/refusals.js'
import type { OpHandler } from '../handler/op-context.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { isIntegerIn } from '../handler/value-checks.js'
import { QuiesceUnconfirmed, runQuiesce } from '../lifecycle/quiesce.js'
import { holdQuiesceGate } from '../lifecycle/quiesce-gate.js'

/** The grace a request may use: an integer 0..confirm − 1, defaulting to the configured one. */
export function resolveQuiesceGraceMs(
	requested: unknown,
	fallback: number,
	confirmTimeoutMs: number,
): number {
	const max = confirmTimeoutMs - 1
	const grace = requested ?? fallback
	if (!isIntegerIn(grace, { min: 0, max })) {
		throw new OpRefusal(
			AGENT_REFUSAL.quiesce_invalid_grace,
			`graceMs must be an integer 0..${max} (NAMZU_AGENT_CANCEL_CONFIRM_TIMEOUT_MS − 1), got ${JSON.stringify(grace)}${requested === undefined ? ' (NAMZU_AGENT_QUIESCE_GRACE_MS)' : ''}`,
		)
	}
	return grace
}

export const quiesce: OpHandler = async (body, ctx) => {
	const { lifecycle } = ctx.config
	const graceMs = resolveQuiesceGraceMs(
		body.graceMs,
		lifecycle.quiesceGraceMs,
		ctx.config.cancelConfirmTimeoutMs,
	)
	const release = holdQuiesceGate(ctx.gates)
	try {
		ctx.reply(
			await runQuiesce({
				graceMs,
				settleMs: lifecycle.quiesceSettleMs,
				maxRounds: lifecycle.quiesceMaxRounds,
				deadlineMs: lifecycle.quiesceDeadlineMs,
				scope: lifecycle.quiesceScope,
				markExecutions: () => ctx.executions.markRunningQuiesced(),
				workloadMembers: () => ctx.workloadCgroups?.memberPids() ?? [],
			}),
		)
	} catch (error) {
		if (!(error instanceof QuiesceUnconfirmed)) throw error
		const reply: QuiesceUnconfirmedReply = {
			ok: false,
			error: AGENT_REFUSAL.quiesce_unconfirmed,
			message: error.detail ?? error.message,
			pid: error.pid,
		}
		ctx.reply(reply)
	} finally {
		release()
	}
}
