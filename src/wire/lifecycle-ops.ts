/**
 * Request and reply shapes of the guest's `quiesce` and `flush` ops. Both are additive ops
 * advertised as features; neither bumps the protocol version, so older hosts and guests keep
 * working together.
 */

/** Where a quiesce looked: the whole pid namespace, or only the kernel sessions the agent owns. */
export type QuiesceScope = 'pid-namespace' | 'owned-sessions'

export interface QuiesceRequest {
	/** SIGTERM → SIGKILL wait per round; at most the agent's cancel confirm timeout − 1. */
	readonly graceMs?: number
}

/** A process `quiesce` ended, by pid and how. */
export interface QuiescedProcess {
	readonly pid: number
	/** The command line (or `comm`) as `/proc` showed it, truncated. */
	readonly command: string
	/** The last signal it was sent before it was seen gone. */
	readonly signal: 'SIGTERM' | 'SIGKILL'
}

/** The guest's answer to `quiesce`: what it stopped, and how widely it looked. */
export interface QuiesceReply {
	readonly ok: true
	readonly scope: QuiesceScope
	readonly graceMs: number
	/** Scan passes made, the last of which found nothing. */
	readonly rounds: number
	readonly stopped: readonly QuiescedProcess[]
}

/** `quiesce_unconfirmed`: a process outlived SIGKILL (or the rounds/deadline ran out). */
export interface QuiesceUnconfirmedReply {
	readonly ok: false
	readonly error: 'quiesce_unconfirmed'
	readonly message: string
	readonly pid: number
}

export interface FlushRequest {
	/** Bound on the sync; default `NAMZU_AGENT_FLUSH_TIMEOUT_MS` (10 000). */
	readonly timeoutMs?: number
}

/** The guest's answer to `flush`: how long the sync took, and over which filesystem. */
export interface FlushReply {
	readonly ok: true
	readonly durationMs: number
	/** The filesystem flushed is the one holding this directory. */
	readonly workspace: string
}
