/**
 * Every execution the agent tracks by id, and every process it runs (with or without an id).
 *
 * ```mermaid
 * stateDiagram-v2
 *   [*] --> reserved: reserve-execution
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
 * Once a cancel is requested the outcome is `cancelled` whatever the exit status, so a command
 * that ignores SIGTERM and happens to finish inside the grace window is never reported as a clean
 * success (changelog 77adb50). A terminal record is kept `NAMZU_AGENT_EXECUTION_TERMINAL_TTL_MS`
 * so a repeated cancel answers the same. Protocol shapes: upstream shapes §3.5.
 */
import { AGENT_PROTOCOL_VERSION } from '../wire/features.js'
import type {
	CancelExecutionReply,
	ExecEvent,
	ExecutionTerminalState,
	ReserveExecutionReply,
} from '../wire/protocol.js'
import { mintExecutionId } from './execution-id.js'
import type { ExecResultFields, ExecutionOutcome, ExecutionProcess } from './execution-process.js'
import { OpRefusal } from './op-context.js'

export type ExecutionState = 'reserved' | 'running' | ExecutionTerminalState

export interface ExecutionRegistryOptions {
	readonly leaseTtlMs: number
	readonly terminalTtlMs: number
	readonly maxTracked: number
	/** Bounds how long a cancel waits for a signalled run to report its result. */
	readonly confirmTimeoutMs: number
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

	reserve(requestedId?: string): ReserveExecutionReply & { state?: ExecutionState } {
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
				}
			}
		}
		this.#makeRoom()
		const id = requestedId ?? mintExecutionId()
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
	 * Claims the reservation (if any) and runs `spawn` in the same tick, so no cancel can slip in
	 * between the state change and the process existing.
	 */
	start(executionId: string | undefined, spawn: () => ExecutionProcess): StartedExecution {
		const record = executionId === undefined ? undefined : this.#claim(executionId)
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

	cancel(executionId: string): Promise<CancelExecutionReply> {
		const record = this.#records.get(executionId)
		if (!record) return Promise.reject(new OpRefusal('unknown_execution'))
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

	async #cancelRunning(record: ExecutionRecord): Promise<CancelExecutionReply> {
		record.cancelRequested = true
		const run = record.process
		const startedAt = performance.now()
		const unconfirmed = () =>
			new OpRefusal(
				'cancellation_unconfirmed',
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
		if (!record) throw new OpRefusal('unknown_execution')
		if (record.state === 'cancelled' && !record.started) throw new OpRefusal('execution_cancelled')
		if (record.state !== 'reserved') throw new OpRefusal(`execution_not_reserved: ${record.state}`)
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
		record.timer = setTimeout(() => this.#records.delete(record.id), this.#options.terminalTtlMs)
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
		for (const record of this.#records.values()) {
			if (isTerminal(record.state)) {
				if (record.timer) clearTimeout(record.timer)
				this.#records.delete(record.id)
				return
			}
		}
		throw new OpRefusal(
			'execution_capacity',
			`execution_capacity: limit ${this.#options.maxTracked} (NAMZU_AGENT_MAX_TRACKED_EXECUTIONS)`,
		)
	}
}
