/**
 * What a suspend asks of the guest before its patch, in order: flush (by default), then quiesce
 * (when asked). Exactly the outcomes that must stop the patch do: a guest that ANSWERED and could
 * not confirm (`FlushUnconfirmedError`, `QuiesceUnconfirmedError`), a quiesce that could not run
 * at all, or the caller's abort. Every other gap is reported through the handle's callbacks and
 * the suspend goes on — a guest that cannot flush, one that cannot be reached to ask (after the
 * transport's connect-retry budget), one that cannot quiesce, one whose scan was narrowed.
 */
import {
	flushThroughAgent,
	quiesceThroughAgent,
} from '../../../host/lifecycle/agent-lifecycle-ops.js'
import {
	FlushUnsupportedError,
	QuiesceUnsupportedError,
} from '../../../host/refusals/guest-feature-errors.js'
import { FlushUnconfirmedError } from '../../../host/refusals/refusal-errors.js'
import { KubernetesFlushUnreachableError } from './workspace-errors.js'
import type { GuestSteps, KubernetesWorkspaceOptions } from './workspace-options.js'
import type { WorkspaceSession } from './workspace-session.js'

/** Runs the steps; resolves the error that stops the suspend, or undefined to go on. */
export async function runSuspendGuestSteps(
	session: WorkspaceSession,
	steps: GuestSteps,
	callbacks: KubernetesWorkspaceOptions,
	signal: AbortSignal | undefined,
): Promise<unknown> {
	if (steps.flush) {
		try {
			await flushThroughAgent(session.transport, { ...steps.flush, ...(signal ? { signal } : {}) })
		} catch (error) {
			if (signal?.aborted) return signal.reason
			if (error instanceof FlushUnconfirmedError) return error
			if (error instanceof FlushUnsupportedError) callbacks.onFlushUnsupported?.(error)
			else {
				callbacks.onFlushUnreachable?.(
					new KubernetesFlushUnreachableError(session.sandboxName, { cause: error }),
				)
			}
		}
	}
	if (steps.quiesce) {
		try {
			const report = await quiesceThroughAgent(session.transport, {
				...steps.quiesce,
				...(signal ? { signal } : {}),
			})
			if (report.scope === 'owned-sessions') callbacks.onQuiesceNarrowed?.(report)
		} catch (error) {
			if (signal?.aborted) return signal.reason
			if (error instanceof QuiesceUnsupportedError) callbacks.onQuiesceUnsupported?.(error)
			else return error
		}
	}
	return undefined
}
