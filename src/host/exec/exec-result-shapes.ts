/**
 * The `SandboxExecResult` shapes a remote execution can end in, the output captured on the way,
 * and the one step from a decided outcome (`execution-outcome.ts`) to the result or the error the
 * caller gets. An aborted result always has `aborted: true`, `timedOut: false` and a non-zero exit
 * code (the guest's; -1 when a signal killed it; 1 when it never started or claims a clean exit),
 * so it never reads as an unaborted success.
 */
import type { SandboxExecResult, SandboxOutputChunk } from '../../contract/sandbox.js'
import { DEFAULT_MAX_OUTPUT_BYTES } from '../../wire/protocol.js'
import { RemoteResultIncompleteError } from './exec-errors.js'
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
 */
export class ExecOutputCapture {
	stdout = ''
	stderr = ''
	stdoutTruncated = false
	stderrTruncated = false
	readonly #onOutput: ((chunk: SandboxOutputChunk) => void) | undefined
	readonly #maxUnits: number

	constructor(
		onOutput?: (chunk: SandboxOutputChunk) => void,
		maxOutputBytes: number = DEFAULT_MAX_OUTPUT_BYTES,
	) {
		this.#onOutput = onOutput
		this.#maxUnits = maxOutputBytes
	}

	readonly push = (chunk: SandboxOutputChunk): void => {
		const stdout = chunk.stream === 'stdout'
		if (stdout ? this.stdoutTruncated : this.stderrTruncated) return
		const held = stdout ? this.stdout.length : this.stderr.length
		let data = chunk.data
		if (held + data.length > this.#maxUnits) {
			data = cutTo(data, this.#maxUnits - held)
			if (stdout) this.stdoutTruncated = true
			else this.stderrTruncated = true
			if (data === '') return
		}
		if (stdout) this.stdout += data
		else this.stderr += data
		try {
			this.#onOutput?.(data === chunk.data ? chunk : { stream: chunk.stream, data })
		} catch {
			// `onOutput` must not throw; a throwing callback never breaks the capture.
		}
	}
}

function truncation(
	metadata: RemoteTerminalMetadata | undefined,
	output: ExecOutputCapture,
): { stdoutTruncated: boolean; stderrTruncated: boolean } {
	return {
		stdoutTruncated: (metadata?.stdoutTruncated ?? false) || output.stdoutTruncated,
		stderrTruncated: (metadata?.stderrTruncated ?? false) || output.stderrTruncated,
	}
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
