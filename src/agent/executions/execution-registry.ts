/**
 * Every execution the agent tracks by id, and every process it runs (with or without an id).
 *
 * ```mermaid
 * stateDiagram-v2
 *   [*] --> reserved: reserve-execution, or execute with reserve (then running at once)
 *   [*] --> cancelled: cancel-execution with fence (never started)
 *   reserved --> [*]: lease lapsed
 *   reserved --> cancelled: cancel-execution (never started)
 *   reserved --> running: execute
 *   running --> completed: exited, no cancel requested
 *   running --> failed: spawn failed
 *   running --> cancelled: exited after a cancel was requested
 *   cancelled --> [*]: terminal TTL
 *   completed --> [*]: terminal TTL
 *   failed --> [*]: terminal TTL
 * ```
 *
 * An `execute` that reserves its own id (`reserveUnseen`, then `start` in the same tick) and a
 * fencing cancel are the two halves of the one-round-trip exec: whichever reaches the agent first
 * decides, through the same states — a fenced id is `cancelled` and never started, so the late
 * `execute` is refused `execution_cancelled` exactly as one whose reservation was cancelled.
 *
 * Once a cancel is requested the outcome is `cancelled` whatever the exit status, so a command
 * that ignores SIGTERM and happens to finish inside the grace window is never reported as a clean
 * success. A terminal record is kept `NAMZU_AGENT_EXECUTION_TERMINAL_TTL_MS` so a repeated
 * cancel answers the same.
 *
 * A run started with `retainOutput` (`startRetained`) writes into its record's `RetainedOutput`
 * instead of one connection, so it outlives that connection and `attach-execution` can follow it;
 * at most `maxRetainedLogs` records hold such output at once, and a retained record is kept
 * `retainedTtlMs` after it ends (then the same id starts a fresh command).
 */

import { mintExecutionId } from '../../wire/execution-id.js'
import { AGENT_PROTOCOL_VERSION } from '../../wire/features.js'
import type {
	CancelExecutionReply,
	ExecEvent,
	ExecutionState,
	ExecutionTerminalState,
	ReserveExecutionReply,
} from '../../wire/protocol.js'
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { agentRandom } from '../lifecycle/agent-random.js'
import type {
	ExecResultFields,
	ExecutionOutcome,
	ExecutionProcess,
	OutputSink,
} from './execution-process.js'
import { ExecutionRefusal } from './execution-refusal.js'
import { RetainedOutput } from './retained-output.js'

export interface ExecutionRegistryOptions {
	readonly leaseTtlMs: number
	readonly terminalTtlMs: number
	readonly maxTracked: number
	/** Bounds how long a cancel waits for a signalled run to report its result. */
	readonly confirmTimeoutMs: number
	/** Bytes of output one retained run keeps (`NAMZU_AGENT_EXECUTION_LOG_BYTES`, default 1 MiB). */
	readonly retainedLogBytes?: number
	/** Records holding retained output at once (`NAMZU_AGENT_MAX_RETAINED_OUTPUT_LOGS`, 32). */
	readonly maxRetainedLogs?: number
	/** How long a retained record outlives its end (`NAMZU_AGENT_EXECUTION_RETAINED_TTL_MS`). */
	readonly retainedTtlMs?: number
}

/** What `attach-execution` follows. */
export interface AttachableExecution {
	readonly retained: RetainedOutput
	readonly state: () => ExecutionState
	/** Resolves when the record reaches a terminal state. */
	readonly settled: Promise<void>
	/** The terminal answer, once settled. */
	readonly final: () => {
		readonly outcome: ExecutionTerminalState
		readonly started: boolean
		readonly result?: ExecResultFields
		readonly error?: string
	}
}

interface ExecutionRecord {
	readonly id: string
	state: ExecutionState
	started: boolean
	cancelRequested: boolean
	leaseExpiresAt: number
	process?: ExecutionProcess
	result?: ExecResultFields
	error?: string
	timer?: NodeJS.Timeout
	cancelling?: Promise<CancelExecutionReply>
	/** Present once a run that asked to retain its output started. */
	retained?: RetainedOutput
	/** Resolves when the record reaches a terminal state. */
	readonly settled: Promise<void>
	readonly markSettled: () => void
}

export interface StartedExecution {
	readonly process: ExecutionProcess
	/** The event that ends the `execute` stream: a `result` (with `cancelled` if so) or an `error`. */
	readonly finalEvent: Promise<ExecEvent>
}

const SYNTHETIC_CANCELLED_RESULT: ExecResultFields = {
	exitCode: 1,
	timedOut: false,
	durationMs: 0,
	stdoutTruncated: false,
	stderrTruncated: false,
	cancelled: true,
}

function isTerminal(state: ExecutionState): state is ExecutionTerminalState {
	return state === 'cancelled' || state === 'completed' || state === 'failed'
}

/** What a finished run means, given whether a cancel was requested before it ended. */
export function settleOutcome(
	outcome: ExecutionOutcome,
	cancelRequested: boolean,
): { state: ExecutionTerminalState; event: ExecEvent } {
	if (outcome.kind === 'error') {
		return {
			state: cancelRequested ? 'cancelled' : 'failed',
			event: { type: 'error', error: outcome.error },
		}
	}
	if (cancelRequested) {
		return {
			state: 'cancelled',
			event: { type: 'result', ...outcome.result, cancelled: true },
		}
	}
	return { state: 'completed', event: { type: 'result', ...outcome.result } }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
	return new Promise((resolve, reject) => {
		const timer = setTimeout(() => resolve('timeout'), Math.max(0, ms))
		promise.then(
			(value) => {
				clearTimeout(timer)
				resolve(value)
			},
			(error: unknown) => {
				clearTimeout(timer)
				reject(error)
			},
		)
	})
}

export class ExecutionRegistry {
	readonly #options: ExecutionRegistryOptions
	readonly #records = new Map<string, ExecutionRecord>()
	/** Every running process, reserved or not, so shutdown can kill them all. */
	readonly #live = new Set<ExecutionProcess>()

	constructor(options: ExecutionRegistryOptions) {
		this.#options = options
	}

	get trackedCount(): number {
		return this.#records.size
	}

	get liveCount(): number {
		return this.#live.size
	}

	stateOf(id: string): ExecutionState | undefined {
		return this.#records.get(id)?.state
	}

	reserve(requestedId?: string): ReserveExecutionReply {
		if (requestedId !== undefined) {
			const existing = this.#records.get(requestedId)
			if (existing) {
				// An id already held reports where it is rather than being reserved twice.
				return {
					ok: true,
					protocolVersion: AGENT_PROTOCOL_VERSION,
					executionId: existing.id,
					leaseExpiresAt: existing.leaseExpiresAt,
					state: existing.state,
					...(existing.retained
						? { retainedOutput: true, outputOffset: existing.retained.nextOffset }
						: {}),
				}
			}
		}
		this.#makeRoom()
		const id = requestedId ?? mintExecutionId(() => agentRandom.uuid())
		const leaseExpiresAt = Date.now() + this.#options.leaseTtlMs
		let markSettled: () => void = () => {}
		const settled = new Promise<void>((resolve) => {
			markSettled = resolve
		})
		const record: ExecutionRecord = {
			id,
			state: 'reserved',
			started: false,
			cancelRequested: false,
			leaseExpiresAt,
			settled,
			markSettled,
		}
		record.timer = setTimeout(() => {
			if (record.state === 'reserved') this.#records.delete(id)
		}, this.#options.leaseTtlMs)
		record.timer.unref()
		this.#records.set(id, record)
		return {
			ok: true,
			protocolVersion: AGENT_PROTOCOL_VERSION,
			executionId: id,
			leaseExpiresAt,
			...(requestedId === undefined ? {} : { state: record.state }),
		}
	}

	/**
	 * Reserves `id` for an `execute` that carries its own reservation, unless the id is already
	 * held — reserved (then `start` claims it), fenced or run (then `start` refuses it).
	 */
	reserveUnseen(id: string): void {
		if (!this.#records.has(id)) this.reserve(id)
	}

	/**
	 * Claims the reservation (if any) and runs `spawn` in the same tick, so no cancel can slip in
	 * between the state change and the process existing.
	 */
	start(
		executionId: string | undefined,
		spawn: () => ExecutionProcess,
		retained?: RetainedOutput,
	): StartedExecution {
		const record = executionId === undefined ? undefined : this.#claim(executionId)
		if (record && retained) record.retained = retained
		const run = spawn()
		if (run.pgid !== undefined) this.#live.add(run)
		if (record) {
			record.process = run
			record.started = run.pgid !== undefined
		}
		const finalEvent = run.outcome.then((outcome) => {
			this.#live.delete(run)
			const settled = settleOutcome(outcome, record?.cancelRequested ?? false)
			if (record) this.#settle(record, settled.state, outcome)
			return settled.event
		})
		return { process: run, finalEvent }
	}

	get retainedCount(): number {
		let count = 0
		for (const record of this.#records.values()) if (record.retained) count++
		return count
	}

	/**
	 * `start` for a run that keeps its output in the guest. Past the retained-log limit it refuses
	 * BEFORE claiming, so the reservation stays usable; otherwise the run writes into the record's
	 * ring, never into one connection.
	 */
	startRetained(
		executionId: string,
		spawn: (sink: OutputSink) => ExecutionProcess,
	): StartedExecution & { readonly retained: RetainedOutput } {
		const limit = this.#options.maxRetainedLogs ?? 32
		if (this.#records.get(executionId)?.state === 'reserved' && this.retainedCount >= limit) {
			throw new ExecutionRefusal(
				formatRefusal(
					AGENT_REFUSAL.retained_output_capacity,
					`limit ${limit} (NAMZU_AGENT_MAX_RETAINED_OUTPUT_LOGS)`,
				),
				{ executionState: 'reserved' },
			)
		}
		const retained = new RetainedOutput(this.#options.retainedLogBytes ?? 1024 * 1024)
		const started = this.start(executionId, () => spawn(retained.sink()), retained)
		return { ...started, retained }
	}

	/** The process of a running `executionId` (undefined once it ended); refuses ids not held. */
	runningProcess(executionId: string): ExecutionProcess | undefined {
		const record = this.#records.get(executionId)
		if (!record) throw new ExecutionRefusal(AGENT_REFUSAL.unknown_execution)
		return record.state === 'running' ? record.process : undefined
	}

	/** The retained run `executionId` names; refuses ids not held or whose output is not kept. */
	attachable(executionId: string): AttachableExecution {
		const record = this.#records.get(executionId)
		if (!record) throw new ExecutionRefusal(AGENT_REFUSAL.unknown_execution)
		const retained = record.retained
		if (!retained) {
			throw new ExecutionRefusal(AGENT_REFUSAL.output_not_retained, {
				executionState: record.state,
			})
		}
		return {
			retained,
			state: () => record.state,
			settled: record.settled,
			final: () => ({
				outcome: isTerminal(record.state) ? record.state : 'cancelled',
				started: record.started,
				...(record.result ? { result: record.result } : {}),
				...(record.error === undefined ? {} : { error: record.error }),
			}),
		}
	}

	/**
	 * Cancels `executionId`. An id never seen is refused `unknown_execution`, unless `fence`: then it
	 * is reserved and cancelled at once, so a later `execute` of it is refused and the answer
	 * (`cancelled`, never started) is true whatever arrives after it.
	 */
	cancel(executionId: string, options: { fence?: boolean } = {}): Promise<CancelExecutionReply> {
		if (options.fence === true && !this.#records.has(executionId)) {
			try {
				this.reserve(executionId)
			} catch (error) {
				return Promise.reject(error)
			}
		}
		const record = this.#records.get(executionId)
		if (!record) return Promise.reject(new OpRefusal(AGENT_REFUSAL.unknown_execution))
		if (isTerminal(record.state)) return Promise.resolve(this.#acknowledge(record))
		if (record.state === 'reserved') {
			record.cancelRequested = true
			record.result = SYNTHETIC_CANCELLED_RESULT
			this.#settle(record, 'cancelled')
			return Promise.resolve(this.#acknowledge(record))
		}
		if (!record.cancelling) {
			record.cancelling = this.#cancelRunning(record).finally(() => {
				record.cancelling = undefined
			})
		}
		return record.cancelling
	}

	/** SIGKILLs every running process group (agent shutdown); returns how many were signalled. */
	killAll(): number {
		let count = 0
		for (const run of this.#live) {
			try {
				run.kill()
				count++
			} catch {
				// Nothing useful to do during shutdown; the next one still gets its signal.
			}
		}
		return count
	}

	/**
	 * Quiesce (quiesce.ts): every running execution is marked as if a cancel was requested, so it
	 * settles `cancelled` however its group dies, before anything is signalled. Answers the group
	 * ids of every live run (each is also its kernel session: runs are spawned detached).
	 */
	markRunningQuiesced(): number[] {
		for (const record of this.#records.values()) {
			if (record.state === 'running') record.cancelRequested = true
		}
		return [...this.#live].flatMap((run) => (run.pgid === undefined ? [] : [run.pgid]))
	}

	async #cancelRunning(record: ExecutionRecord): Promise<CancelExecutionReply> {
		record.cancelRequested = true
		const run = record.process
		const startedAt = performance.now()
		const unconfirmed = () =>
			new OpRefusal(
				AGENT_REFUSAL.cancellation_unconfirmed,
				`execution ${record.id} did not confirm termination within ${this.#options.confirmTimeoutMs} ms (NAMZU_AGENT_CANCEL_CONFIRM_TIMEOUT_MS)`,
			)
		if (run) {
			const terminated = await run.terminate()
			if (terminated === 'unconfirmed') throw unconfirmed()
		}
		const left = this.#options.confirmTimeoutMs - (performance.now() - startedAt)
		// The group is gone; the result lands once its output pipes have closed.
		if ((await withTimeout(record.settled, left)) === 'timeout') throw unconfirmed()
		return this.#acknowledge(record)
	}

	#claim(id: string): ExecutionRecord {
		const record = this.#records.get(id)
		if (!record) throw new ExecutionRefusal(AGENT_REFUSAL.unknown_execution)
		if (record.state === 'cancelled' && !record.started) {
			throw new ExecutionRefusal(AGENT_REFUSAL.execution_cancelled, {
				executionState: record.state,
			})
		}
		if (record.state !== 'reserved') {
			throw new ExecutionRefusal(
				formatRefusal(AGENT_REFUSAL.execution_not_reserved, record.state),
				{
					executionState: record.state,
				},
			)
		}
		if (record.timer) clearTimeout(record.timer)
		record.state = 'running'
		return record
	}

	#settle(
		record: ExecutionRecord,
		state: ExecutionTerminalState,
		outcome?: ExecutionOutcome,
	): void {
		record.state = state
		if (outcome?.kind === 'result') {
			record.result =
				state === 'cancelled' ? { ...outcome.result, cancelled: true } : outcome.result
		} else if (outcome?.kind === 'error') {
			record.error = outcome.error
		}
		record.process = undefined
		if (record.timer) clearTimeout(record.timer)
		const ttlMs = record.retained
			? (this.#options.retainedTtlMs ?? 10 * 60_000)
			: this.#options.terminalTtlMs
		record.timer = setTimeout(() => this.#records.delete(record.id), ttlMs)
		record.timer.unref()
		record.markSettled()
	}

	#acknowledge(record: ExecutionRecord): CancelExecutionReply {
		const state = isTerminal(record.state) ? record.state : 'cancelled'
		return {
			ok: true,
			state,
			started: record.started,
			...(record.result ? { result: record.result } : {}),
			...(record.error === undefined ? {} : { error: record.error }),
		}
	}

	/** At capacity, forget the oldest finished record; refuse only when every record is live. */
	#makeRoom(): void {
		if (this.#records.size < this.#options.maxTracked) return
		// Finished records without retained output go first: those with it may still be attached.
		for (const keepRetained of [true, false]) {
			for (const record of this.#records.values()) {
				if (isTerminal(record.state) && !(keepRetained && record.retained)) {
					if (record.timer) clearTimeout(record.timer)
					this.#records.delete(record.id)
					return
				}
			}
		}
		throw new OpRefusal(
			AGENT_REFUSAL.execution_capacity,
			formatRefusal(
				AGENT_REFUSAL.execution_capacity,
				`limit ${this.#options.maxTracked} (NAMZU_AGENT_MAX_TRACKED_EXECUTIONS)`,
			),
		)
	}
}
