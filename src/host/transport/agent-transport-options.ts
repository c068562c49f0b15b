/**
 * Limits, defaults and options of the host's agent transport, resolved once at construction. Every
 * duration is in milliseconds; a bad value is refused naming the option rather than guessed at.
 */
import {
	CONFIG_SITE,
	optionalBoolean,
	optionalInteger,
} from '../../contract/argument-validators.js'
import { AGENT_PROTOCOL_VERSION } from '../../wire/features.js'
import type { BinaryPlacement } from '../../wire/frame-reader.js'
import { STREAM_EVENT_FRAME_BYTES, WHOLE_FILE_REPLY_FRAME_BYTES } from '../../wire/reply-bounds.js'

// The three public limits are written as literals so their types carry the values (the package's
// type tests read them there).
/** 256 MiB: the largest frame a guest accepts once authenticated (`NAMZU_AGENT_MAX_FRAME_BYTES`). */
export const GUEST_FRAME_LIMIT_BYTES = 268_435_456
/** 8 MiB: the largest first frame of an unauthenticated tcp connection (`…_MAX_PREAUTH_FRAME_BYTES`). */
export const TCP_PREAUTH_FRAME_LIMIT_BYTES = 8_388_608
/** 1 GiB: the largest `writeFile` body the host sends at all, unless `maxWriteFileBytes` says otherwise. */
export const DEFAULT_MAX_WRITE_FILE_BYTES = 1_073_741_824
/** The only guest protocol version this host speaks. */
export const REMOTE_EXECUTION_PROTOCOL_VERSION = AGENT_PROTOCOL_VERSION
/** After a request-shaped reply, the peer must close within this long. */
export const POST_RESPONSE_CLOSE_TIMEOUT_MS = 1000
/** Bound on the best-effort removal of an abandoned part sequence's temp file. */
export const WRITE_PART_DISCARD_TIMEOUT_MS = 5000
/** TCP keepalive probe delay on tcp handles. */
export const TCP_KEEPALIVE_MS = 15_000
/** Raw bytes per binary frame of a streamed `writeFile` (the guest writes each as it arrives). */
export const UPLOAD_CHUNK_BYTES = 1024 * 1024
/**
 * Ceiling of any incoming frame, whatever a call asks: above the guest's own, so a whole-file
 * base64 reply still fits. Each op has its own, lower one (`wire/reply-bounds.ts`).
 */
export const HOST_READ_FRAME_LIMIT_BYTES = WHOLE_FILE_REPLY_FRAME_BYTES
/**
 * Ceiling of one frame of an `execute` / `attach-execution` stream. The guest sends one delta per
 * pipe read (at most 64 KiB of output, at most 384 KiB once JSON-escaped) and small result events,
 * so this is ample headroom while keeping what a lying guest makes the host buffer small.
 */
export const EXEC_STREAM_FRAME_LIMIT_BYTES = STREAM_EVENT_FRAME_BYTES
/** Largest whole file `readFile` gathers into one Buffer (1 GiB) unless `maxReadFileBytes` says. */
export const DEFAULT_MAX_READ_FILE_BYTES = 1_073_741_824
/** What a `readSession` reply may hold, unless the call's `maxBytes` says otherwise (64 MiB). */
export const DEFAULT_SESSION_READ_MAX_BYTES = 67_108_864

/** A dial that got a connection: how many attempts it took and how long. */
export interface AgentDialEvent {
	readonly handleKind: string
	readonly attempts: number
	readonly durationMs: number
}

/** One connect attempt about to be made (`attempt` is 1-based). */
export interface AgentDialAttemptEvent {
	readonly handleKind: string
	readonly attempt: number
}

/** Options of an `AgentTransport`: bounds on dialing, frames and bodies, and dial hooks. */
export interface AgentTransportOptions {
	/** Bound on one connection attempt (connect plus any handshake). Default 5000. */
	readonly connectTimeoutMs?: number
	/** Total time spent retrying a dial before `AgentDialFailedError`. Default 30 000. */
	readonly connectRetryBudgetMs?: number
	/** Pause between dial attempts. Default 100. */
	readonly connectRetryIntervalMs?: number
	/** A request or read stream silent this long fails. Not applied to exec, terminal or tcp. Default 60 000. */
	readonly readIdleTimeoutMs?: number
	/** Bound on control requests (reserve, cancel attempts, healthz). Default 2000. */
	readonly controlRequestTimeoutMs?: number
	/** Largest `writeFile` body sent at all. Default `DEFAULT_MAX_WRITE_FILE_BYTES` (1 GiB). */
	readonly maxWriteFileBytes?: number
	/**
	 * Largest whole file `readFile` gathers, whatever size the guest announces. Default
	 * `DEFAULT_MAX_READ_FILE_BYTES` (1 GiB); `readFileStream` has no such bound (it holds one chunk).
	 */
	readonly maxReadFileBytes?: number
	/** Raw bytes per part of a part sequence. Default (and ceiling): the most one frame admits. */
	readonly writeFilePartBytes?: number
	/**
	 * Largest request frame this transport sends, below the guest's own limit (8 MiB pre-auth for a
	 * tcp handle, `GUEST_FRAME_LIMIT_BYTES` otherwise). Bodies above it travel in parts, so the guest
	 * never holds more than about twice this per write: the local tier sets it to keep a large
	 * `writeFile` inside a small sandbox's memory limit.
	 */
	readonly maxRequestFrameBytes?: number
	/** True for a dial error no retry can fix; stops the retry loop at once. */
	readonly permanentDialFailure?: (error: Error) => boolean
	/** Told about every established connection. Must not throw. */
	readonly onDial?: (event: AgentDialEvent) => void
	/** Told once per connect attempt, before it is made. Must not throw. */
	readonly onDialAttempt?: (event: AgentDialAttemptEvent) => void
	/**
	 * Heartbeat interval asked for on terminal and tcp streams (stream-heartbeat.ts); used only once
	 * the guest echoes it. Undefined or 0: none (the default here; the Kubernetes backend asks for
	 * `DEFAULT_STREAM_HEARTBEAT_MS`).
	 */
	readonly streamHeartbeatMs?: number
	/**
	 * Whether bulk bytes (file reads and writes, exec output, terminal and tcp streams) may travel
	 * as binary data frames to a guest advertising `binary-frames`. Default true; false keeps every
	 * byte base64 / JSON, exactly as a host that predates them.
	 */
	readonly binaryFrames?: boolean
	/**
	 * Whether `exec` sends its reservation inside the `execute` request (one round trip) to a guest
	 * advertising `execute-reserves`. Default true; false keeps the `reserve-execution` round trip
	 * first, exactly as a host that predates it.
	 */
	readonly executeReserves?: boolean
}

/** `AgentTransportOptions` with every default applied. */
export interface ResolvedAgentTransportOptions {
	readonly connectTimeoutMs: number
	readonly connectRetryBudgetMs: number
	readonly connectRetryIntervalMs: number
	readonly readIdleTimeoutMs: number
	readonly controlRequestTimeoutMs: number
	readonly maxWriteFileBytes: number
	readonly maxReadFileBytes: number
	readonly writeFilePartBytes?: number
	readonly maxRequestFrameBytes?: number
	/** Whether a failed attempt ends the dial at once instead of retrying. */
	readonly permanentDialFailure: (error: Error) => boolean
	/** Told after each dial that got a connection. */
	readonly onDial?: (event: AgentDialEvent) => void
	/** Told before each connect attempt. */
	readonly onDialAttempt?: (event: AgentDialAttemptEvent) => void
	/** Present only when a heartbeat is asked for (> 0). */
	readonly streamHeartbeatMs?: number
	/** Whether binary data frames are asked for from a guest that advertises them. */
	readonly binaryFrames: boolean
	/** Whether `execute` carries its own reservation to a guest that advertises it. */
	readonly executeReserves: boolean
}

/** The defaults `AgentTransportOptions` falls back to. */
export const DEFAULT_AGENT_TRANSPORT_OPTIONS = {
	connectTimeoutMs: 5000,
	connectRetryBudgetMs: 30_000,
	connectRetryIntervalMs: 100,
	readIdleTimeoutMs: 60_000,
	controlRequestTimeoutMs: 2000,
	maxWriteFileBytes: DEFAULT_MAX_WRITE_FILE_BYTES,
	maxReadFileBytes: DEFAULT_MAX_READ_FILE_BYTES,
} as const

function positiveInteger(field: string, value: number | undefined, fallback: number): number {
	return optionalInteger(CONFIG_SITE, field, value, { min: 1 }) ?? fallback
}

function nonNegativeInteger(field: string, value: number | undefined, fallback: number): number {
	return optionalInteger(CONFIG_SITE, field, value, { min: 0 }) ?? fallback
}

function heartbeatOption(value: number | undefined): { streamHeartbeatMs?: number } {
	const ms = nonNegativeInteger('streamHeartbeatMs', value, 0)
	return ms === 0 ? {} : { streamHeartbeatMs: ms }
}

export function resolveAgentTransportOptions(
	options: AgentTransportOptions = {},
): ResolvedAgentTransportOptions {
	const d = DEFAULT_AGENT_TRANSPORT_OPTIONS
	const resolved: ResolvedAgentTransportOptions = {
		connectTimeoutMs: positiveInteger(
			'connectTimeoutMs',
			options.connectTimeoutMs,
			d.connectTimeoutMs,
		),
		connectRetryBudgetMs: nonNegativeInteger(
			'connectRetryBudgetMs',
			options.connectRetryBudgetMs,
			d.connectRetryBudgetMs,
		),
		connectRetryIntervalMs: nonNegativeInteger(
			'connectRetryIntervalMs',
			options.connectRetryIntervalMs,
			d.connectRetryIntervalMs,
		),
		readIdleTimeoutMs: positiveInteger(
			'readIdleTimeoutMs',
			options.readIdleTimeoutMs,
			d.readIdleTimeoutMs,
		),
		controlRequestTimeoutMs: positiveInteger(
			'controlRequestTimeoutMs',
			options.controlRequestTimeoutMs,
			d.controlRequestTimeoutMs,
		),
		maxWriteFileBytes: nonNegativeInteger(
			'maxWriteFileBytes',
			options.maxWriteFileBytes,
			d.maxWriteFileBytes,
		),
		maxReadFileBytes: nonNegativeInteger(
			'maxReadFileBytes',
			options.maxReadFileBytes,
			d.maxReadFileBytes,
		),
		permanentDialFailure: options.permanentDialFailure ?? (() => false),
		binaryFrames: optionalBoolean(CONFIG_SITE, 'binaryFrames', options.binaryFrames) ?? true,
		executeReserves:
			optionalBoolean(CONFIG_SITE, 'executeReserves', options.executeReserves) ?? true,
		...(options.onDial ? { onDial: options.onDial } : {}),
		...(options.onDialAttempt ? { onDialAttempt: options.onDialAttempt } : {}),
		...heartbeatOption(options.streamHeartbeatMs),
	}
	return {
		...resolved,
		...(options.writeFilePartBytes === undefined
			? {}
			: {
					writeFilePartBytes: positiveInteger('writeFilePartBytes', options.writeFilePartBytes, 1),
				}),
		...(options.maxRequestFrameBytes === undefined
			? {}
			: {
					maxRequestFrameBytes: positiveInteger(
						'maxRequestFrameBytes',
						options.maxRequestFrameBytes,
						1,
					),
				}),
	}
}

/** Options of one request over the transport. */
export interface AgentRequestOptions {
	readonly signal?: AbortSignal
	/** Silence bound for this exchange; 0 disables. Default `readIdleTimeoutMs`. */
	readonly idleTimeoutMs?: number
	/** Told how long this request's dial took (retries included) once it has a socket. */
	readonly onDialed?: (durationMs: number) => void
	/**
	 * Ceiling on each frame the guest may answer with, in place of the op's own
	 * (`wire/reply-bounds.ts`), never above `HOST_READ_FRAME_LIMIT_BYTES`: a ranged read knows its
	 * reply's size, a session read is held to its `maxBytes`.
	 */
	readonly maxFrameBytes?: number
	/**
	 * Ask for binary data frames on this connection (only when `binaryFramesAgreed`; the body gets
	 * `binaryFrames: true` and the channel accepts binary frames).
	 */
	readonly binaryFrames?: boolean
	/**
	 * @internal Where the stream's large binary `data` payloads are read into instead of buffers the reader
	 * lends (`wire/frame-reader.ts`): a gathered read places each chunk in its final buffer.
	 */
	readonly placeBinaryData?: BinaryPlacement
}
