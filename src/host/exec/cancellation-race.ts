/**
 * The one race of an execution against its cancellation, shared by the plain and the detachable
 * path. A cancellation is started (once) by the caller's abort, by the observation deadline when
 * the path sets one, or — on the plain path — to reconcile an execution that failed. Whichever
 * settles first is followed by what the other can still tell: a started run that was cancelled
 * gets `resultDrainTimeoutMs` to deliver its result. The observations are `ExecutionFacts` for
 * `decideExecutionOutcome`; nothing here decides what they mean.
 */
import { settleWithin } from '../../common/bounded-promise.js'
import type {
	CancellationReason,
	CancellationSettlement,
	ExecutionFacts,
	ExecutionSettlement,
} from './execution-outcome.js'
import type { RemoteCancellationAcknowledgement } from './remote-execution-messages.js'

export interface CancellationRaceOptions {
	/** The execution side; it must never reject (failures are a `failed` settlement). */
	readonly execution: Promise<ExecutionSettlement>
	/** One confirmed cancellation (`confirmCancellation`); rejects when it cannot be confirmed. */
	readonly confirm: () => Promise<RemoteCancellationAcknowledgement>
	readonly caller: AbortSignal | undefined
	/** Cancel with reason `observation-timeout` after this long; absent: no deadline of our own. */
	readonly observationDeadlineMs?: number
	/** Follow a failed execution with a reconciling cancellation (the plain path). */
	readonly reconcileFailure: boolean
	/** How long a cancelled, started run may take to deliver its result. */
	readonly resultDrainTimeoutMs: number
}

function settleCancellation(
	pending: Promise<RemoteCancellationAcknowledgement>,
): Promise<CancellationSettlement> {
	return pending.then(
		(ack) => ({ kind: 'confirmed', ack }),
		(error: unknown) => ({ kind: 'unknown', error }),
	)
}

export async function runCancellationRace(
	options: CancellationRaceOptions,
): Promise<ExecutionFacts> {
	const { caller, execution } = options
	let reason: CancellationReason | undefined
	let cancellation: Promise<CancellationSettlement> | undefined
	let announce: (settled: Promise<CancellationSettlement>) => void = () => {}
	// Settles with the cancellation's outcome once one has been started, for whatever reason.
	const cancellationSettled = new Promise<CancellationSettlement>((resolve) => {
		announce = resolve
	})
	const cancel = (why: CancellationReason): Promise<CancellationSettlement> => {
		if (!cancellation) {
			reason = why
			cancellation = settleCancellation(options.confirm())
			announce(cancellation)
		}
		return cancellation
	}
	const onAbort = () => {
		cancel('caller')
	}
	caller?.addEventListener('abort', onAbort, { once: true })
	if (caller?.aborted) onAbort()
	const deadline = options.observationDeadlineMs
	const timer =
		deadline === undefined ? undefined : setTimeout(() => cancel('observation-timeout'), deadline)
	const callerAborted = () => caller?.aborted === true

	try {
		const first = await Promise.race([
			execution.then((settled) => ({ from: 'execution' as const, settled })),
			cancellationSettled.then((settled) => ({ from: 'cancellation' as const, settled })),
		])
		if (first.from === 'execution') {
			const reconciled =
				first.settled.kind === 'failed' && options.reconcileFailure
					? await cancel('reconcile')
					: undefined
			return {
				first: 'execution',
				execution: first.settled,
				...(reconciled ? { cancellation: reconciled } : {}),
				callerAborted: callerAborted(),
			}
		}
		const settled = first.settled
		const drained =
			settled.kind === 'confirmed' && settled.ack.started
				? await settleWithin(execution, options.resultDrainTimeoutMs)
				: undefined
		return {
			first: 'cancellation',
			cancellation: settled,
			reason: reason ?? 'caller',
			...(drained ? { execution: drained } : {}),
			callerAborted: callerAborted(),
		}
	} finally {
		clearTimeout(timer)
		caller?.removeEventListener('abort', onAbort)
	}
}
