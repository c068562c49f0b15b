/**
 * The `SandboxExecResult` shapes a remote execution can end in, and the output captured on the
 * way. An aborted result always has `aborted: true`, `timedOut: false` and a non-zero exit code
 * (the guest's; -1 when a signal killed it; 1 when it never started or claims a clean exit), so it
 * never reads as an unaborted success.
 */
import type { SandboxExecResult, SandboxOutputChunk } from '../../contract/sandbox.js'
import type { RemoteTerminalMetadata } from './remote-execution-messages.js'

/** Accumulates deltas and forwards each one to the caller's `onOutput` as it arrives. */
export class ExecOutputCapture {
	stdout = ''
	stderr = ''
	readonly #onOutput: ((chunk: SandboxOutputChunk) => void) | undefined

	constructor(onOutput?: (chunk: SandboxOutputChunk) => void) {
		this.#onOutput = onOutput
	}

	readonly push = (chunk: SandboxOutputChunk): void => {
		if (chunk.stream === 'stdout') this.stdout += chunk.data
		else this.stderr += chunk.data
		try {
			this.#onOutput?.(chunk)
		} catch {
			// `onOutput` must not throw; a throwing callback never breaks the capture.
		}
	}
}

function truncation(metadata: RemoteTerminalMetadata | undefined): {
	stdoutTruncated: boolean
	stderrTruncated: boolean
} {
	return {
		stdoutTruncated: metadata?.stdoutTruncated ?? false,
		stderrTruncated: metadata?.stderrTruncated ?? false,
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
		...truncation(metadata),
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
		...truncation(metadata),
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
		...truncation(metadata),
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
