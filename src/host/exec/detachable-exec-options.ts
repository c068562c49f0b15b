/**
 * Options of detachable executions on `AgentSandbox` (the Kubernetes workspace will re-export them
 * under its `Kubernetes*` names). `SandboxExecOptions` itself is untouched: only a call that names
 * an `executionId` or asks to `detach` takes the detachable path.
 */
import type { SandboxOutputChunk } from '../../contract/sandbox.js'
import type { AgentExecOptions } from './exec-options.js'

/** How long a detachable exec keeps trying to get back after losing its connection. */
export const DEFAULT_REATTACH_WINDOW_MS = 30_000

/** `exec` options of a command that survives its connection (`executionId`, `detach`). */
export interface DetachableExecOptions extends AgentExecOptions {
	/**
	 * Caller-named id (`exec_<uuid>`). Starting the same id twice while the guest holds its record
	 * runs the command once: the second call follows the first run.
	 */
	readonly executionId?: string
	/** Retain output in the guest under a minted id, so the command survives lost connections. */
	readonly detach?: boolean
	/** Ends the watching, leaves the command running; the call rejects `ExecutionDetachedError`. */
	readonly detachSignal?: AbortSignal
	/** Bound on getting back after a lost connection; disarmed once a reattach succeeds. */
	readonly reattachWindowMs?: number
	/** Told how many output bytes the guest had already evicted when the host got back. */
	readonly onGap?: (lostBytes: number) => void
	/**
	 * Told the execution id once the guest accepted the reservation (before the command runs), so
	 * a caller of `detach: true` can hand it to another process. Must not throw.
	 */
	readonly onExecutionId?: (executionId: string) => void
	/** Keep the command's stdin open for `execution-input` (`spawn`'s `openStdin`). */
	readonly openStdin?: boolean
}

/** Options of `attachExecution`. */
export interface AttachExecutionOptions {
	/** First output byte wanted (default 0: everything the guest still holds). */
	readonly fromOffset?: number
	/** Called as output arrives, as `SandboxExecOptions.onOutput`. */
	readonly onOutput?: (chunk: SandboxOutputChunk) => void
	/** Told how many bytes the guest had evicted before they could be read. */
	readonly onGap?: (lostBytes: number) => void
	/** Aborting only detaches (`ExecutionDetachedError`); it never signals the command. */
	readonly signal?: AbortSignal
	/** Bound on getting back after a lost connection. Default `DEFAULT_REATTACH_WINDOW_MS`. */
	readonly reattachWindowMs?: number
	/** Per-stream output the host holds, as `AgentExecOptions.maxOutputBytes`. */
	readonly maxOutputBytes?: number
}

/** Options of `cancelExecution`. */
export interface CancelExecutionOptions {
	readonly signal?: AbortSignal
}

/** Whether `exec` takes the detachable path (otherwise the wire request is the plain one). */
export function isDetachable(options: DetachableExecOptions): boolean {
	return options.executionId !== undefined || options.detach === true
}
