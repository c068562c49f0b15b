/**
 * The `SandboxExecResult` shapes a remote execution can end in, the output captured on the way,
 * and the one step from a decided outcome (`execution-outcome.ts`) to the result or the error the
 * caller gets. An aborted result always has `aborted: true`, `timedOut: false` and a non-zero exit
 * code (the guest's; -1 when a signal killed it; 1 when it never started or claims a clean exit),
 * so it never reads as an unaborted success.
 */
import type {
	SandboxExecResult,
	SandboxOutputChunk,
	SandboxOutputTruncationReason,
} from '../../contract/sandbox.js'
import { DEFAULT_MAX_OUTPUT_BYTES } from '../../wire/protocol.js'
import { RemoteResultIncompleteError } from './exec-errors.js'
import type { ExecOutputBudget } from './exec-output-budget.js'
import type { ExecutionDecision } from './execution-outcome.js'
import type { RemoteTerminalMetadata } from './remote-execution-messages.js'

/** `text` cut to at most `room` UTF-16 units, never inside a surrogate pair. */
function cutTo(text: string, room: number): string {
	if (room <= 0) return ''
	const last = text.charCodeAt(room - 1)
	return text.slice(0, last >= 0xd800 && last <= 0xdbff ? room - 1 : room)
}

/**
 * Accumulates deltas and forwards each one to the caller's `onOutput` as it arrives, holding at most
 * `maxOutputBytes` per stream whatever the guest sends. The bound is counted in UTF-16 units of the
 * decoded text, which is never more than the raw bytes the guest's own cap counts (every decoded
 * character, a replacement character included, costs at least one byte), so a guest that honours
 * its cap is never cut here. Past the bound the host does what the agent does: the rest of that
 * stream is dropped (not kept, not forwarded), the result says `…Truncated`, and the stream is
 * drained to its end — the command's lifetime does not depend on how much it prints.
 *
 * What it keeps is also taken from the provider's `ExecOutputBudget`, and given back by `release()`
 * once the result is handed out. A stream the budget cannot serve keeps what it has and keeps
 * nothing more (`outputTruncation: 'output-budget'`), while `onOutput` still sees its chunks up to
 * `maxOutputBytes`: the budget bounds what the host holds, not what passes through it.
 */
export class ExecOutputCapture {
	stdout = ''
	stderr = ''
	/** Why each stream stopped being kept, once it did. */
	readonly truncation: {
		stdout?: SandboxOutputTruncationReason
		stderr?: SandboxOutputTruncationReason
	} = {}
	readonly #onOutput: ((chunk: SandboxOutputChunk) => void) | undefined
	readonly #maxUnits: number
	readonly #budget: ExecOutputBudget | undefined
	/** Units seen per stream (kept or not), against `maxOutputBytes`. */
	readonly #seen = { stdout: 0, stderr: 0 }
	/** Streams past `maxOutputBytes`: nothing more is kept or forwarded. */
	readonly #capped = { stdout: false, stderr: false }
	/** Streams the budget stopped serving: nothing more is kept. */
	readonly #unkept = { stdout: false, stderr: false }
	#taken = 0

	readonly #collect: boolean

	/** `collect: false` (`collectOutput: false`): forward everything, keep and bound nothing. */
	constructor(
		onOutput?: (chunk: SandboxOutputChunk) => void,
		maxOutputBytes: number = DEFAULT_MAX_OUTPUT_BYTES,
		budget?: ExecOutputBudget,
		collect = true,
	) {
		this.#onOutput = onOutput
		this.#maxUnits = collect ? maxOutputBytes : Number.POSITIVE_INFINITY
		this.#budget = collect ? budget : undefined
		this.#collect = collect
	}

	get stdoutTruncated(): boolean {
		return this.truncation.stdout !== undefined
	}

	get stderrTruncated(): boolean {
		return this.truncation.stderr !== undefined
	}

	/**
	 * Keeps and forwards `chunk`. Uncollected, a promise `onOutput` returns is handed back so the
	 * reader waits for it (the consumer's backpressure); a rejected one counts as settled.
	 */
	readonly push = (chunk: SandboxOutputChunk): Promise<void> | undefined => {
		const stream = chunk.stream
		if (this.#capped[stream]) return undefined
		let data = chunk.data
		const seen = this.#seen[stream]
		if (seen + data.length > this.#maxUnits) {
			data = cutTo(data, this.#maxUnits - seen)
			this.#capped[stream] = true
			this.truncation[stream] ??= 'max-output-bytes'
			if (data === '') return undefined
		}
		this.#seen[stream] = seen + data.length
		if (this.#collect && !this.#unkept[stream]) this.#keep(stream, data)
		try {
			const held: unknown = this.#onOutput?.(data === chunk.data ? chunk : { stream, data })
			if (!this.#collect && held instanceof Promise) return held.then(undefined, () => {})
		} catch {
			// `onOutput` must not throw; a throwing callback never breaks the capture.
		}
		return undefined
	}

	/** Keeps `data` as far as the budget grants; past it, nothing more of this stream is kept. */
	#keep(stream: 'stdout' | 'stderr', data: string): void {
		let kept = data
		if (this.#budget) {
			const granted = this.#budget.take(data.length)
			kept = granted < data.length ? cutTo(data, granted) : data
			// A cut surrogate pair gives back the unit it did not keep.
			this.#budget.give(granted - kept.length)
			this.#taken += kept.length
			if (kept.length < data.length) {
				this.#unkept[stream] = true
				// The budget cut falls before any cap cut of the same chunk: it is the reason.
				this.truncation[stream] = 'output-budget'
			}
		}
		if (stream === 'stdout') this.stdout += kept
		else this.stderr += kept
	}

	/** Gives what this exec held back to the budget (its result is the caller's now). Idempotent. */
	release(): void {
		this.#budget?.give(this.#taken)
		this.#taken = 0
	}
}

/** Each stream's truncation as the result reports it: the guest's flags, the host's reasons. */
function truncation(
	metadata: RemoteTerminalMetadata | undefined,
	output: ExecOutputCapture,
): Pick<SandboxExecResult, 'stdoutTruncated' | 'stderrTruncated' | 'outputTruncation'> {
	const stdout =
		output.truncation.stdout ?? (metadata?.stdoutTruncated ? 'max-output-bytes' : undefined)
	const stderr =
		output.truncation.stderr ?? (metadata?.stderrTruncated ? 'max-output-bytes' : undefined)
	return {
		stdoutTruncated: stdout !== undefined,
		stderrTruncated: stderr !== undefined,
		...(stdout === undefined && stderr === undefined
			? {}
			: {
					outputTruncation: {
						...(stdout === undefined ? {} : { stdout }),
						...(stderr === undefined ? {} : { stderr }),
					},
				}),
	}
}

const USAGE_FIELDS = [
	'oomKilled',
	'cpuUserMs',
	'cpuSystemMs',
	'peakMemoryBytes',
	'ioReadBytes',
	'ioWriteBytes',
] as const

/** What the command's tree used, as the guest counted it; absent fields stay absent. */
function usageOf(metadata: RemoteTerminalMetadata | undefined): Partial<SandboxExecResult> {
	const usage: Record<string, number | boolean> = {}
	for (const field of USAGE_FIELDS) {
		const value = metadata?.[field]
		if (value !== undefined) usage[field] = value
	}
	return usage
}

/** A run that ended on its own (or by its own deadline). */
export function completedResult(
	metadata: RemoteTerminalMetadata,
	output: ExecOutputCapture,
): SandboxExecResult {
	return {
		exitCode: metadata.exitCode,
		stdout: output.stdout,
		stderr: output.stderr,
		...(metadata.signal === undefined ? {} : { signal: metadata.signal }),
		timedOut: metadata.timedOut,
		durationMs: metadata.durationMs,
		...truncation(metadata, output),
		...usageOf(metadata),
	}
}

/** A run the observation deadline cancelled: `timedOut: true`, never `aborted`. */
export function timedOutResult(
	metadata: RemoteTerminalMetadata | undefined,
	output: ExecOutputCapture,
	durationMs: number,
): SandboxExecResult {
	const exitCode = metadata === undefined || metadata.exitCode === 0 ? -1 : metadata.exitCode
	return {
		exitCode,
		stdout: output.stdout,
		stderr: output.stderr,
		...(metadata?.signal === undefined ? {} : { signal: metadata.signal }),
		timedOut: true,
		durationMs,
		...truncation(metadata, output),
		...usageOf(metadata),
	}
}

/** The exit code an aborted run reports: never 0. */
export function abortedExitCode(metadata: RemoteTerminalMetadata | undefined): number {
	if (metadata === undefined) return -1
	if (metadata.exitCode !== 0) return metadata.exitCode
	return metadata.signal === undefined ? 1 : -1
}

/** A run the caller's signal ended after it started; output captured so far is kept. */
export function abortedResult(
	metadata: RemoteTerminalMetadata | undefined,
	output: ExecOutputCapture,
	durationMs: number,
): SandboxExecResult {
	return {
		exitCode: abortedExitCode(metadata),
		stdout: output.stdout,
		stderr: output.stderr,
		...(metadata?.signal === undefined ? {} : { signal: metadata.signal }),
		timedOut: false,
		aborted: true,
		durationMs,
		...truncation(metadata, output),
		...usageOf(metadata),
	}
}

/** The caller's signal ended the call before the command was admitted: nothing ran. */
export function neverStartedResult(durationMs: number): SandboxExecResult {
	return {
		exitCode: 1,
		stdout: '',
		stderr: '',
		timedOut: false,
		aborted: true,
		durationMs,
		stdoutTruncated: false,
		stderrTruncated: false,
	}
}

/** What `resultOfDecision` needs besides the decision: names for the messages, the call's time. */
export interface DecisionContext {
	/** Who ran it (`guest agent (unix)`), for the incomplete-result message. */
	readonly label: string
	readonly executionId: string
	/** Time since the call began: the duration of results the call itself ended. */
	readonly elapsedMs: number
	readonly resultDrainTimeoutMs: number
}

/** The result the caller gets for `decision`, or the error it throws. */
export function resultOfDecision(
	decision: ExecutionDecision,
	output: ExecOutputCapture,
	context: DecisionContext,
): SandboxExecResult {
	switch (decision.kind) {
		case 'completed':
			return completedResult(decision.metadata, output)
		case 'timed-out':
			return timedOutResult(decision.metadata, output, context.elapsedMs)
		case 'aborted': {
			const { metadata } = decision
			const durationMs =
				decision.durationFrom === 'guest' && metadata ? metadata.durationMs : context.elapsedMs
			return abortedResult(metadata, output, durationMs)
		}
		case 'never-started':
			return neverStartedResult(context.elapsedMs)
		case 'failed':
			throw decision.error
		case 'incomplete': {
			const { label, executionId } = context
			const message =
				decision.stage === 'lost-result'
					? `${label}: ${executionId} failed after it started and its result was lost`
					: `${label}: cancellation of ${executionId} was confirmed but its result did not arrive within ${context.resultDrainTimeoutMs} ms`
			throw new RemoteResultIncompleteError(
				message,
				decision.ack,
				decision.cause === undefined ? {} : { cause: decision.cause },
			)
		}
	}
}
