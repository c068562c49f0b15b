/**
 * The negotiated stream heartbeat, shared by the guest
 * and the host: the constants, the frame, the two clamps (the guest's floor before it echoes, the
 * host's window on what it accepts back) and `StreamLiveness`, the pure silence counter both sides'
 * watchdogs run. Liveness is counted in bytes, not frames, and time spent paused for backpressure is
 * never counted as silence.
 */

/** The frame either side sends every interval once the heartbeat is negotiated. */
export interface StreamHeartbeat {
	readonly type: 'heartbeat'
}

export const STREAM_HEARTBEAT_FRAME: StreamHeartbeat = Object.freeze({ type: 'heartbeat' })
/** Silent intervals after which a side ends the stream. */
export const STREAM_HEARTBEAT_MISS_LIMIT = 3
/** The smallest interval the guest uses; a smaller request is raised to it before the echo. */
export const MIN_STREAM_HEARTBEAT_MS = 100
/** The host honours an echoed interval only up to this many times what it asked for. */
export const STREAM_HEARTBEAT_MAX_ECHO_FACTOR = 4
/** What the Kubernetes backend asks for; the shared transport asks for nothing by default. */
export const DEFAULT_STREAM_HEARTBEAT_MS = 15_000
/** The watchdog never polls faster than this, whatever the interval. */
export const MIN_STREAM_HEARTBEAT_POLL_MS = 10

/**
 * The guest's side of the negotiation: the interval it will use for a requested `heartbeatMs`, or
 * undefined when none was requested (or the value is not a positive finite number).
 */
export function clampRequestedHeartbeatMs(requested: unknown): number | undefined {
	if (typeof requested !== 'number' || !Number.isFinite(requested) || requested <= 0) {
		return undefined
	}
	return Math.max(MIN_STREAM_HEARTBEAT_MS, Math.round(requested))
}

/**
 * The host's side: the echoed interval when it lies in [MIN, FACTOR × requested], otherwise
 * undefined (the stream then runs without a heartbeat, as against a guest that echoed nothing).
 */
export function acceptEchoedHeartbeatMs(requestedMs: number, echoed: unknown): number | undefined {
	if (typeof echoed !== 'number' || !Number.isFinite(echoed)) return undefined
	if (echoed < MIN_STREAM_HEARTBEAT_MS) return undefined
	if (echoed > requestedMs * STREAM_HEARTBEAT_MAX_ECHO_FACTOR) return undefined
	return echoed
}

/** How often a watchdog checks: a quarter of the interval, never below the poll floor. */
export function heartbeatPollMs(intervalMs: number): number {
	return Math.max(MIN_STREAM_HEARTBEAT_POLL_MS, Math.floor(intervalMs / 4))
}

/**
 * Silence bookkeeping for one stream. Every received byte is life; a poll made while reading is
 * paused for backpressure restarts the silence (the peer cannot be heard while we are not
 * listening). `check` answers `dead` once `MISS_LIMIT` whole intervals passed with neither.
 */
export class StreamLiveness {
	readonly intervalMs: number
	#lastLifeAt: number

	constructor(intervalMs: number, now: number) {
		this.intervalMs = intervalMs
		this.#lastLifeAt = now
	}

	/** Some bytes arrived (any number, including part of a frame). */
	noteBytes(now: number): void {
		this.#lastLifeAt = now
	}

	/** One watchdog poll. */
	check(now: number, readingPaused: boolean): 'alive' | 'dead' {
		if (readingPaused) {
			this.#lastLifeAt = now
			return 'alive'
		}
		return now - this.#lastLifeAt >= STREAM_HEARTBEAT_MISS_LIMIT * this.intervalMs
			? 'dead'
			: 'alive'
	}
}
