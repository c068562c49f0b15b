/**
 * Failures of the host's agent transport itself: dialing (and the per-attempt causes it carries),
 * frame ceilings, body limits, silence — on a request or on a heartbeat-watched stream — and
 * broken connections. What a guest's answer becomes (a refusal, a broken protocol) is in
 * `../refusals/refusal-errors.ts`, a guest lacking a feature in `../refusals/guest-feature-errors.ts`.
 * Messages name limits and the handle kind, never a token or file contents.
 */
import { SandboxError, type SandboxErrorOptions } from '../../contract/errors.js'
import { STREAM_HEARTBEAT_MISS_LIMIT } from '../../wire/heartbeat.js'
import type { SandboxAgentHandleKind } from './agent-handle.js'

/** No socket to the agent could be established within the retry budget (or a permanent failure). */
export class AgentDialFailedError extends SandboxError<'dial-failed-permanently' | 'dial-failed'> {
	override readonly name = 'AgentDialFailedError'
	readonly handleKind: SandboxAgentHandleKind
	readonly attempts: number
	readonly elapsedMs: number

	constructor(
		handleKind: SandboxAgentHandleKind,
		attempts: number,
		elapsedMs: number,
		options: SandboxErrorOptions & { permanent?: boolean } = {},
	) {
		const last = options.cause instanceof Error ? `: ${options.cause.message}` : ''
		super(
			`could not dial the guest agent (${handleKind}) after ${attempts} attempt(s) in ${Math.round(elapsedMs)} ms${last}`,
			options.permanent ? 'dial-failed-permanently' : 'dial-failed',
			{ cause: options.cause, retryable: !options.permanent },
		)
		this.handleKind = handleKind
		this.attempts = attempts
		this.elapsedMs = elapsedMs
	}
}

/** One connect attempt got no connection within `connectTimeoutMs` (a cause of `AgentDialFailedError`). */
export class ConnectTimeoutError extends SandboxError<'connect-timeout'> {
	override readonly name = 'ConnectTimeoutError'
	readonly code = 'ETIMEDOUT'
	readonly timeoutMs: number

	constructor(timeoutMs: number) {
		super(`connect attempt timed out after ${timeoutMs} ms`, 'connect-timeout', { retryable: true })
		this.timeoutMs = timeoutMs
	}
}

/** The Firecracker `CONNECT <port>` preamble was refused or cut short (a cause of `AgentDialFailedError`). */
export class VsockHandshakeError extends SandboxError<'vsock-handshake-failed'> {
	override readonly name = 'VsockHandshakeError'

	constructor(message: string) {
		super(message, 'vsock-handshake-failed', { retryable: true })
	}
}

/** An outgoing request envelope is larger than the guest will accept in one frame. */
export class AgentFrameTooLargeError extends SandboxError<
	'frame-too-large' | 'preauth-frame-too-large'
> {
	override readonly name: string = 'AgentFrameTooLargeError'
	readonly frameBytes: number
	readonly limitBytes: number

	constructor(
		message: string,
		frameBytes: number,
		limitBytes: number,
		reason: 'frame-too-large' | 'preauth-frame-too-large' = 'frame-too-large',
	) {
		super(message, reason)
		this.frameBytes = frameBytes
		this.limitBytes = limitBytes
	}
}

/**
 * A `tcp` request envelope above the guest's pre-auth ceiling: every tcp request is its
 * connection's first, unauthenticated frame, so it is refused before dialing.
 */
export class AgentPreauthFrameTooLargeError extends AgentFrameTooLargeError {
	override readonly name = 'AgentPreauthFrameTooLargeError'
	declare readonly reason: 'preauth-frame-too-large'

	constructor(frameBytes: number, limitBytes: number, options: { guestLacks?: string } = {}) {
		const missing =
			options.guestLacks === undefined
				? ''
				: `; the guest does not advertise '${options.guestLacks}', so the body cannot be sent in parts — rebuild the guest image to get it`
		super(
			`request frame of ${frameBytes} bytes exceeds the guest pre-auth frame limit of ${limitBytes} bytes (NAMZU_AGENT_MAX_PREAUTH_FRAME_BYTES)${missing}`,
			frameBytes,
			limitBytes,
			'preauth-frame-too-large',
		)
	}
}

/** A `writeFile` body above `maxWriteFileBytes`, refused before any route is chosen or dialed. */
export class AgentWriteFileTooLargeError extends SandboxError<'write-file-too-large'> {
	override readonly name = 'AgentWriteFileTooLargeError'
	readonly sizeBytes: number
	readonly limitBytes: number

	constructor(sizeBytes: number, limitBytes: number) {
		super(
			`writeFile body of ${sizeBytes} bytes exceeds maxWriteFileBytes (${limitBytes} bytes)`,
			'write-file-too-large',
		)
		this.sizeBytes = sizeBytes
		this.limitBytes = limitBytes
	}
}

/**
 * A whole-file `readFile` of a file the guest says is larger than `maxReadFileBytes`, refused
 * before any byte is gathered (`readFileStream` reads it a chunk at a time).
 */
export class AgentReadFileTooLargeError extends SandboxError<'read-file-too-large'> {
	override readonly name = 'AgentReadFileTooLargeError'
	readonly sizeBytes: number
	readonly limitBytes: number

	constructor(sizeBytes: number, limitBytes: number) {
		super(
			`readFile of ${sizeBytes} bytes exceeds maxReadFileBytes (${limitBytes} bytes); use readFileStream`,
			'read-file-too-large',
		)
		this.sizeBytes = sizeBytes
		this.limitBytes = limitBytes
	}
}

/**
 * A `listFiles` whose answer passed what the host holds of one listing (`MAX_LISTING_BYTES`:
 * each entry's path plus a fixed cost per entry): refused, never cut short to look complete.
 */
export class AgentListingTooLargeError extends SandboxError<'listing-too-large'> {
	override readonly name = 'AgentListingTooLargeError'
	readonly path: string
	readonly limitBytes: number
	/** Entries received when the listing was refused. */
	readonly entries: number

	constructor(path: string, limitBytes: number, entries: number) {
		super(
			`listFiles ${path}: the listing passed the host's bound of ${limitBytes} bytes after ${entries} entries; list a narrower directory or use walkFiles with maxEntries`,
			'listing-too-large',
		)
		this.path = path
		this.limitBytes = limitBytes
		this.entries = entries
	}
}

/** The connection went silent for longer than `readIdleTimeoutMs`. */
export class AgentReadTimeoutError extends SandboxError<'read-timeout'> {
	override readonly name = 'AgentReadTimeoutError'
	readonly op: string
	readonly idleMs: number

	constructor(op: string, idleMs: number) {
		super(`${op}: the guest agent sent nothing for ${idleMs} ms`, 'read-timeout', {
			retryable: true,
		})
		this.op = op
		this.idleMs = idleMs
	}
}

/** The connection failed after it was established (reset, broken pipe). */
export class AgentConnectionError extends SandboxError<'connection-failed'> {
	override readonly name = 'AgentConnectionError'
	readonly op: string

	constructor(op: string, options: SandboxErrorOptions = {}) {
		const detail = options.cause instanceof Error ? `: ${options.cause.message}` : ''
		super(`${op}: connection to the guest agent failed${detail}`, 'connection-failed', options)
		this.op = op
	}
}

/**
 * A heartbeat-watched stream whose guest went silent (`stream-heartbeat.ts`). Separate from
 * `AgentReadTimeoutError`: that bound is for request-shaped exchanges, this one is the negotiated
 * liveness of a long-lived stream.
 */
export class AgentStreamSilentError extends SandboxError<'stream-silent'> {
	override readonly name = 'AgentStreamSilentError'
	readonly op: string
	readonly heartbeatMs: number

	constructor(op: string, heartbeatMs: number) {
		super(
			`${op}: the guest agent sent nothing for ${STREAM_HEARTBEAT_MISS_LIMIT} heartbeat intervals of ${heartbeatMs} ms; the stream is dead`,
			'stream-silent',
			{ retryable: true },
		)
		this.op = op
		this.heartbeatMs = heartbeatMs
	}
}

/** How a guest agent ended, as far as its tier can tell. */
export interface GuestExit {
	/** The agent's exit code when it exited by itself; null when a signal ended it or it is unknown. */
	readonly exitCode: number | null
	/** The signal that ended it (`SIGKILL` for the OOM killer); null when none did or it is unknown. */
	readonly signal: NodeJS.Signals | null
	/**
	 * True when the tier's memory counters show the OOM killer took it, false when they show it did
	 * not; absent when the tier cannot tell.
	 */
	readonly oomKilled?: boolean
	/** The sandbox whose guest it was, when the tier knows. */
	readonly sandboxId?: string
}

function describeGuestExit(exit: GuestExit): string {
	if (exit.oomKilled === true) return `was killed by the OOM killer (${exit.signal ?? 'SIGKILL'})`
	if (exit.signal !== null) return `was killed by ${exit.signal}`
	if (exit.exitCode !== null) return `exited with code ${exit.exitCode}`
	return 'ended'
}

/**
 * The guest agent died under the sandbox (it exited, was killed, or the OOM killer took it):
 * every call in flight fails with this error as soon as the tier reports the death, and so does
 * every later call. Nothing in the guest survives its agent; `destroy()` still releases the unit.
 */
export class GuestDiedError extends SandboxError<'guest-died'> {
	override readonly name = 'GuestDiedError'
	readonly exitCode: number | null
	readonly signal: NodeJS.Signals | null
	/** Absent when the tier cannot tell (no memory counters). */
	readonly oomKilled?: boolean
	readonly sandboxId?: string

	constructor(exit: GuestExit, options: SandboxErrorOptions = {}) {
		const subject = exit.sandboxId === undefined ? 'the sandbox' : `sandbox ${exit.sandboxId}`
		super(
			`${subject}: the guest agent ${describeGuestExit(exit)}; nothing in it can answer any more (destroy() releases what is left)`,
			'guest-died',
			{ ...options, retryable: false },
		)
		this.exitCode = exit.exitCode
		this.signal = exit.signal
		if (exit.oomKilled !== undefined) this.oomKilled = exit.oomKilled
		if (exit.sandboxId !== undefined) this.sandboxId = exit.sandboxId
	}
}
