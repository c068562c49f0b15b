/**
 * The options of an exec on the host: the portable `SandboxExecOptions` plus the bound the host
 * holds itself to whatever the guest sends. The contract is unchanged; `AgentSandbox.exec` (and so
 * every agent-backed tier) takes these.
 */
import { SandboxConfigError } from '../../contract/errors.js'
import type { SandboxExecOptions } from '../../contract/sandbox.js'
import { DEFAULT_MAX_OUTPUT_BYTES } from '../../wire/protocol.js'

export interface AgentExecOptions extends SandboxExecOptions {
	/**
	 * Per-stream output bound, default `DEFAULT_MAX_OUTPUT_BYTES` (100 MiB, the guest's own default
	 * cap). Output past it is dropped — neither kept nor passed to `onOutput` — while the command
	 * runs on, and the result says `stdoutTruncated` / `stderrTruncated`, exactly as the guest
	 * reports its own cap. Sent to the guest only when set, so it caps there too.
	 */
	readonly maxOutputBytes?: number
}

/** The per-stream output bound of one exec: the option, else the guest's own default cap. */
export function resolveMaxOutputBytes(value: number | undefined): number {
	if (value === undefined) return DEFAULT_MAX_OUTPUT_BYTES
	if (!Number.isSafeInteger(value) || value <= 0) {
		throw new SandboxConfigError('maxOutputBytes', `must be a positive safe integer, got ${value}`)
	}
	return value
}
