/**
 * The spec's names for the one host transport: `VsockAgentTransport` is `AgentTransport` (every
 * handle kind, not only vsock) with the two verbs the microVM tier's callers know it by, and
 * `VsockTransportOptions` is `AgentTransportOptions` with the heartbeat under the spec's name.
 * Nothing here is a second implementation: each member delegates to the shared one.
 */
import type { ExecuteRequest } from '../../wire/protocol.js'
import { writeFileThroughAgent } from '../files/agent-file-write.js'
import type { SandboxAgentHandle } from '../transport/agent-handle.js'
import { AgentTransport } from '../transport/agent-transport.js'
import type { AgentTransportOptions } from '../transport/agent-transport-options.js'

/** `AgentTransportOptions` as the microVM tier names them. */
export interface VsockTransportOptions extends Omit<AgentTransportOptions, 'streamHeartbeatMs'> {
	/**
	 * Heartbeat interval asked for on terminal and tcp streams. Undefined by default: a quiet but
	 * live terminal is never closed for silence unless a caller opts in.
	 */
	readonly heartbeatMs?: number
}

function sharedOptions(options: VsockTransportOptions): AgentTransportOptions {
	const { heartbeatMs, ...rest } = options
	return heartbeatMs === undefined ? rest : { ...rest, streamHeartbeatMs: heartbeatMs }
}

/** The host's agent transport under the microVM tier's name (unix, vsock and tcp handles alike). */
export class VsockAgentTransport extends AgentTransport {
	constructor(handle: SandboxAgentHandle, options: VsockTransportOptions = {}) {
		super(handle, sharedOptions(options))
	}

	/** The `execute` event stream (`AgentTransport.execute`); the signal ends it. */
	executeStreamed(
		request: ExecuteRequest,
		signal: AbortSignal,
	): AsyncGenerator<Record<string, unknown>, void, undefined> {
		return this.execute(request, signal)
	}

	/**
	 * Writes a file atomically: refused above `maxWriteFileBytes` with
	 * `AgentWriteFileTooLargeError` before any connection, parts of `writeFilePartBytes` when the
	 * body does not fit one frame.
	 */
	writeFile(path: string, data: string | Uint8Array, signal?: AbortSignal): Promise<void> {
		return writeFileThroughAgent(this, path, data, signal)
	}
}
