/**
 * The options of an exec on the host: the portable `SandboxExecOptions` plus the bound the host
 * holds itself to whatever the guest sends. The contract is unchanged; `AgentSandbox.exec` (and so
 * every agent-backed tier) takes these.
 */
import type { SandboxExecOptions } from '../../contract/sandbox.js'
import { DEFAULT_MAX_OUTPUT_BYTES } from '../../wire/protocol.js'

/** `SandboxExecOptions` plus the per-stream output bound the host applies. */
export interface AgentExecOptions extends SandboxExecOptions {
	/**
	 * Per-stream output bound, default `DEFAULT_MAX_OUTPUT_BYTES` (100 MiB, the guest's own default
	 * cap). Output past it is dropped — neither kept nor passed to `onOutput` — while the command
	 * runs on, and the result says `stdoutTruncated` / `stderrTruncated`, exactly as the guest
	 * reports its own cap. Sent to the guest only when set, so it caps there too.
	 */
	readonly maxOutputBytes?: number
}

/** What the controller asks an adapter to run: the reserved id, the command, the wire version. */
export interface RemoteExecuteRequest {
	readonly executionId: string
	readonly command: string
	readonly args: readonly string[]
	readonly cwd?: string
	readonly env?: Readonly<Record<string, string>>
	readonly stdin?: string
	readonly timeoutMs: number
	/** Sent only when the caller set it; the guest's default cap is the host's default. */
	readonly maxOutputBytes?: number
	/** The request reserves `executionId` itself (one round trip; only to a guest that can). */
	readonly reserve?: boolean
	/** Sent only when false: the guest kills the tree when the command's own process exits. */
	readonly keepDescendants?: boolean
	/** Sent only when true (a background command's `openStdin`; only with `retainOutput`). */
	readonly openStdin?: boolean
}

/**
 * The `execute` body of one reserved run: what the caller set, the bound only when set, and
 * `reserve` when the request carries its own reservation.
 */
export function executeRequestOf(
	executionId: string,
	command: string,
	args: readonly string[],
	options: AgentExecOptions & { readonly openStdin?: boolean },
	defaultTimeoutMs: number,
	reserve = false,
): RemoteExecuteRequest {
	return {
		executionId,
		command,
		args,
		...(options.cwd === undefined ? {} : { cwd: options.cwd }),
		...(options.env === undefined ? {} : { env: options.env }),
		...(options.stdin === undefined ? {} : { stdin: options.stdin }),
		// The one place an exec's timeout is resolved: the caller's, else the sandbox's default.
		timeoutMs: options.timeout ?? defaultTimeoutMs,
		...guestOutputBound(options),
		...(reserve ? { reserve: true } : {}),
		...(options.keepDescendants === false ? { keepDescendants: false } : {}),
		...(options.openStdin === true ? { openStdin: true } : {}),
	}
}

/** An uncollected exec is bounded by nothing the guest keeps: it only forwards, under backpressure. */
function guestOutputBound(options: AgentExecOptions): { readonly maxOutputBytes?: number } {
	if (options.collectOutput === false) return { maxOutputBytes: Number.MAX_SAFE_INTEGER }
	return options.maxOutputBytes === undefined ? {} : { maxOutputBytes: options.maxOutputBytes }
}

/**
 * The per-stream output bound of one exec: the option, else the guest's own default cap. The value
 * was checked where the call entered (`sandbox/sandbox-arguments.ts`), the engine's only caller.
 */
export function resolveMaxOutputBytes(value: number | undefined): number {
	return value ?? DEFAULT_MAX_OUTPUT_BYTES
}
