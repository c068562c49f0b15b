/**
 * The host's client of one guest agent. Every request dials a fresh connection (so a resumed or
 * restarted guest costs nothing extra), carries the handle's token on `tcp`, and is held to the
 * wire's reply discipline (`exchange.ts`). Guest features are read once per transport from
 * `healthz`. Verbs that are a sequence of exchanges (the file verbs in `../files/`, sessions,
 * quiesce and flush) are functions that take the transport; it knows none of them.
 */

import { performance } from 'node:perf_hooks'
import { raceSignal } from '../../common/bounded-promise.js'
import { withBinaryFramesRequest } from '../../wire/binary-frame.js'
import { BINARY_FRAMES_FEATURE, EXECUTE_RESERVES_FEATURE } from '../../wire/features.js'
import { encodedFrameBytes, encodeFrameWithBase64, FRAME_HEADER_BYTES } from '../../wire/frame.js'
import {
	AGENT_OP,
	type AgentOp,
	type AttachExecutionRequest,
	type ExecuteRequest,
	type TcpConnectRequest,
	type TerminalRequest,
} from '../../wire/protocol.js'
import type { WireRefusal } from '../../wire/refusals.js'
import type { SandboxAgentHandle } from './agent-handle.js'
import { AgentTcpConnection } from './agent-tcp-connection.js'
import { AgentTerminalSession } from './agent-terminal-session.js'
import {
	type AgentRequestOptions,
	type AgentTransportOptions,
	GUEST_FRAME_LIMIT_BYTES,
	type ResolvedAgentTransportOptions,
	resolveAgentTransportOptions,
	TCP_PREAUTH_FRAME_LIMIT_BYTES,
	UPLOAD_CHUNK_BYTES,
} from './agent-transport-options.js'
import { dialAgent } from './dial.js'
import {
	readSingleReply,
	readStreamEvents,
	readStreamReady,
	refusalError,
	refusalOf,
} from './exchange.js'
import { FrameChannel } from './frame-channel.js'
import { GuestLiveness } from './guest-liveness.js'
import { type AgentHealth, parseHealthzReply } from './healthz-reply.js'
import { ReservationRecord, type ReservedGuest } from './reservation-record.js'
import { startHostStreamHeartbeat, withHeartbeatRequest } from './stream-heartbeat.js'
import { AgentFrameTooLargeError, AgentPreauthFrameTooLargeError } from './transport-errors.js'

export type { AgentRequestOptions } from './agent-transport-options.js'
export { RESERVATION_RECORD_LIMIT, type ReservedGuest } from './reservation-record.js'

/** Requests to one guest agent, a fresh connection per request, every reply held to the host's bounds. */
export class AgentTransport {
	#handle: SandboxAgentHandle
	readonly options: ResolvedAgentTransportOptions
	/**
	 * Whether the guest is alive, as its tier reports it (`liveness.watch(death)`): once it died,
	 * every open connection fails with its `GuestDiedError` and every request refuses with it at
	 * once, without dialing. Outlives `rebind`: a transport whose guest died stays dead.
	 */
	readonly liveness = new GuestLiveness()
	#features: Promise<ReadonlySet<string>> | undefined
	/** The same features once read, for decisions that must not dial (`binaryFramesAgreed`). */
	#knownFeatures: ReadonlySet<string> | undefined
	#guestBootId: string | undefined
	readonly #reservations = new ReservationRecord()

	constructor(handle: SandboxAgentHandle, options: AgentTransportOptions = {}) {
		this.#handle = handle
		this.options = resolveAgentTransportOptions(options)
	}

	/** Where requests go. Every request dials afresh, so a rebind takes effect on the next one. */
	get handle(): SandboxAgentHandle {
		return this.#handle
	}

	/**
	 * Points later requests at a different guest (a Kubernetes pod replaced under its handle): new
	 * address, new per-instance token. Cached features and the guest boot id are forgotten, since
	 * they belong to the previous guest.
	 */
	rebind(handle: SandboxAgentHandle): void {
		this.#handle = handle
		this.#features = undefined
		this.#knownFeatures = undefined
		this.#guestBootId = undefined
	}

	/**
	 * Whether a request may ask for binary data frames now: this host has them on and the guest's
	 * features, already read, advertise them. Never dials: until features were read (any `healthz`
	 * through this transport reads them) every byte goes base64 / JSON, as to an old guest.
	 */
	get binaryFramesAgreed(): boolean {
		return this.options.binaryFrames && (this.#knownFeatures?.has(BINARY_FRAMES_FEATURE) ?? false)
	}

	/**
	 * Whether an `execute` may carry its own reservation now (one round trip, `execute-reserves`):
	 * this host has it on and the features already read advertise it. Never dials, as above.
	 */
	get executeReservesAgreed(): boolean {
		return (
			this.options.executeReserves && (this.#knownFeatures?.has(EXECUTE_RESERVES_FEATURE) ?? false)
		)
	}

	/**
	 * The `guestBootId` the guest stamped on the last reply that carried one (reserve, cancel,
	 * read-file, write-file, stream `ready`, attach); undefined against a guest that sends none.
	 * A change means a different agent process: everything started before is gone.
	 */
	get guestBootId(): string | undefined {
		return this.#guestBootId
	}

	/** Remembers the `guestBootId` a guest message carries, if any. */
	noteGuestBootId(message: Record<string, unknown>): void {
		if (typeof message.guestBootId === 'string') this.#guestBootId = message.guestBootId
	}

	/** Largest request frame payload sent to the guest: its limit, or the configured lower one. */
	get frameLimitBytes(): number {
		const guest =
			this.handle.kind === 'tcp' ? TCP_PREAUTH_FRAME_LIMIT_BYTES : GUEST_FRAME_LIMIT_BYTES
		return Math.min(guest, this.options.maxRequestFrameBytes ?? guest)
	}

	get #token(): string | undefined {
		return this.handle.kind === 'tcp' ? this.handle.token : undefined
	}

	/**
	 * `{ op, token?, body? }`: the body goes last so a bulk body's trailing `content` is the
	 * payload's last string, which the guest decodes without building it (ascii-string-members.ts).
	 */
	#envelope(op: AgentOp, body: unknown): object {
		const token = this.#token
		const head = token === undefined ? { op } : { op, token }
		return body === undefined ? head : { ...head, body }
	}

	/** Payload bytes of the envelope `request(op, body)` would send (token included, never shown). */
	encodedRequestBytes(op: AgentOp, body: unknown): number {
		return encodedFrameBytes(this.#envelope(op, body)) - FRAME_HEADER_BYTES
	}

	/** Encodes an envelope, refusing (before any dial) one the guest could not accept. */
	#encode(envelope: object): Buffer {
		const frame = encodeFrameWithBase64(envelope)
		const payloadBytes = frame.length - FRAME_HEADER_BYTES
		const limit = this.frameLimitBytes
		if (payloadBytes <= limit) return frame
		if (this.handle.kind === 'tcp') throw new AgentPreauthFrameTooLargeError(payloadBytes, limit)
		throw new AgentFrameTooLargeError(
			`request frame of ${payloadBytes} bytes exceeds the guest frame limit of ${limit} bytes (NAMZU_AGENT_MAX_FRAME_BYTES)`,
			payloadBytes,
			limit,
		)
	}

	async #open(
		op: AgentOp,
		frame: Buffer,
		signal: AbortSignal | undefined,
		options: Pick<
			AgentRequestOptions,
			'onDialed' | 'maxFrameBytes' | 'binaryFrames' | 'placeBinaryData'
		> = {},
	): Promise<FrameChannel> {
		const { liveness } = this
		liveness.throwIfDied()
		const started = performance.now()
		const socket = await dialAgent(this.handle, this.options, liveness.join(signal))
		options.onDialed?.(performance.now() - started)
		const channel = new FrameChannel(
			socket,
			op,
			options.maxFrameBytes,
			options.binaryFrames,
			options.placeBinaryData,
		)
		// For the channel's whole life (a terminal or tcp channel outlives the call that opened it).
		const unbind = channel.bindSignal(liveness.signal)
		void channel.closed.then(unbind)
		channel.sendEncoded(frame)
		return channel
	}

	/** One request-shaped exchange; answers the raw reply, refusals included. */
	async request(
		op: AgentOp,
		body: unknown,
		options: AgentRequestOptions = {},
	): Promise<Record<string, unknown>> {
		return this.#requestFrame(op, this.#encode(this.#envelope(op, body)), options)
	}

	async #requestFrame(
		op: AgentOp,
		frame: Buffer,
		options: AgentRequestOptions,
	): Promise<Record<string, unknown>> {
		options.signal?.throwIfAborted()
		const channel = await this.#open(op, frame, options.signal, options)
		const unbind = channel.bindSignal(options.signal)
		channel.setIdleTimeout(options.idleTimeoutMs ?? this.options.readIdleTimeoutMs)
		try {
			const reply = await readSingleReply(channel)
			this.noteGuestBootId(reply)
			return reply
		} finally {
			unbind()
			if (!channel.isClosed) channel.destroy()
		}
	}

	/** A request-shaped exchange whose `{ ok: false }` answer is thrown as a named refusal. */
	async call(
		op: AgentOp,
		body: unknown,
		options: AgentRequestOptions = {},
	): Promise<Record<string, unknown>> {
		const reply = await this.request(op, body, options)
		const refusal = refusalOf(reply)
		if (refusal !== undefined) throw refusalError(op, refusal)
		return reply
	}

	/**
	 * A request-shaped exchange whose envelope is followed by `bytes` as binary data frames of
	 * `UPLOAD_CHUNK_BYTES` and an `{ type: 'end' }` frame; the guest consumes them as they arrive,
	 * so neither side holds the body twice. Only when `binaryFramesAgreed` (the caller checks).
	 * Sending stops as soon as the guest says anything (it answers early only to refuse).
	 */
	async upload(
		op: AgentOp,
		body: unknown,
		bytes: Uint8Array,
		options: AgentRequestOptions = {},
	): Promise<Record<string, unknown>> {
		const frame = this.#encode(this.#envelope(op, withBinaryFramesRequest(body, true)))
		options.signal?.throwIfAborted()
		const channel = await this.#open(op, frame, options.signal, { ...options, binaryFrames: true })
		const unbind = channel.bindSignal(options.signal)
		channel.setIdleTimeout(options.idleTimeoutMs ?? this.options.readIdleTimeoutMs)
		let answered = false
		const heard = new Promise<void>((resolve) => {
			const stop = channel.onBytes(() => {
				answered = true
				stop()
				resolve()
			})
			void channel.closed.then(() => {
				stop()
				resolve()
			})
		})
		try {
			const reply = readSingleReply(channel)
			// Observed below; sending may still be under way when a refusal settles it.
			reply.catch(() => undefined)
			const step = Math.min(UPLOAD_CHUNK_BYTES, this.frameLimitBytes)
			for (let at = 0; at < bytes.byteLength; at += step) {
				if (answered || channel.isClosed) break
				const chunk = bytes.subarray(at, Math.min(bytes.byteLength, at + step))
				if (!channel.sendBinary('data', chunk)) await channel.drainedOr(heard)
			}
			if (!answered && !channel.isClosed) channel.send({ type: 'end' })
			// An early answer (a refusal) ends the upload: our end of file lets the guest close once
			// it has read what was already in flight, instead of both sides waiting on the other.
			else if (!channel.isClosed) channel.end()
			const result = await reply
			this.noteGuestBootId(result)
			return result
		} finally {
			unbind()
			if (!channel.isClosed) channel.destroy()
		}
	}

	/** A stream-shaped exchange: each event until the terminator. Breaking out closes the connection. */
	async *stream(
		op: AgentOp,
		body: unknown,
		options: AgentRequestOptions = {},
	): AsyncGenerator<Record<string, unknown>, void, undefined> {
		const binaryFrames = options.binaryFrames === true && this.binaryFramesAgreed
		const frame = this.#encode(this.#envelope(op, withBinaryFramesRequest(body, binaryFrames)))
		options.signal?.throwIfAborted()
		const channel = await this.#open(op, frame, options.signal, { ...options, binaryFrames })
		const unbind = channel.bindSignal(options.signal)
		channel.setIdleTimeout(options.idleTimeoutMs ?? this.options.readIdleTimeoutMs)
		try {
			for await (const event of readStreamEvents(channel)) {
				const refusal = refusalOf(event)
				if (refusal !== undefined) throw refusalError(op, refusal)
				yield event
			}
		} finally {
			unbind()
			if (!channel.isClosed) channel.destroy()
		}
	}

	/** Opens a long-lived two-way op (terminal, tcp-connect) and waits for its `ready`. */
	async #openDuplex(op: AgentOp, body: unknown, signal?: AbortSignal): Promise<FrameChannel> {
		const options = { binaryFrames: true, ...(signal ? { signal } : {}) }
		return (await this.openStream(op, body, options)).channel
	}

	/**
	 * Opens a long-lived two-way op (terminal, tcp-connect, attach-session) and waits for its
	 * `ready`, which is returned (session streams carry their fields on it). Asks for the heartbeat
	 * and arms it on the guest's echo. A refusal before `ready` becomes `mapRefusal(refusal)`,
	 * default the transport's own refusal errors.
	 */
	async openStream(
		op: AgentOp,
		body: unknown,
		options: {
			readonly signal?: AbortSignal
			readonly mapRefusal?: (refusal: WireRefusal) => Error
			/** Ask for binary data frames (`terminal`, `tcp-connect`), when agreed. */
			readonly binaryFrames?: boolean
		} = {},
	): Promise<{ channel: FrameChannel; ready: Record<string, unknown> }> {
		const { signal } = options
		const heartbeatMs = this.options.streamHeartbeatMs
		const binaryFrames = options.binaryFrames === true && this.binaryFramesAgreed
		const withHeartbeat = withHeartbeatRequest(body, heartbeatMs)
		const frame = this.#encode(
			this.#envelope(op, withBinaryFramesRequest(withHeartbeat, binaryFrames)),
		)
		signal?.throwIfAborted()
		const channel = await this.#open(op, frame, signal, { binaryFrames })
		const unbind = channel.bindSignal(signal)
		channel.setIdleTimeout(this.options.readIdleTimeoutMs)
		let ready: Record<string, unknown>
		try {
			ready = await readStreamReady(channel, options.mapRefusal)
			this.noteGuestBootId(ready)
		} catch (error) {
			channel.destroy()
			throw error
		} finally {
			unbind()
		}
		// A quiet stream is not a failure; its owner ends it.
		channel.setIdleTimeout(0)
		// Replaced, when the guest echoed an interval, by the negotiated heartbeat's watchdog.
		startHostStreamHeartbeat(channel, heartbeatMs, ready.heartbeatMs)
		return { channel, ready }
	}

	// ---- health ---------------------------------------------------------------------------------

	/** `healthz`, strictly validated (ok true, protocol version exactly 2). */
	async healthz(signal?: AbortSignal): Promise<AgentHealth> {
		const handle = this.handle
		const reply = await this.request(AGENT_OP.healthz, undefined, signal ? { signal } : {})
		const health = parseHealthzReply(reply)
		// Every probe refreshes what is known of the guest it reached (not one rebound away since).
		if (this.handle === handle) this.#knownFeatures = new Set(health.features)
		return health
	}

	/** The guest's advertised features, read once per transport (a failed read is retried). */
	features(signal?: AbortSignal): Promise<ReadonlySet<string>> {
		if (!this.#features) {
			const pending = this.healthz().then((health): ReadonlySet<string> => new Set(health.features))
			this.#features = pending
			pending.catch(() => {
				if (this.#features === pending) this.#features = undefined
			})
		}
		return raceSignal(this.#features, signal)
	}

	// ---- executions -----------------------------------------------------------------------------

	/**
	 * `{}` exactly as before unless the caller names the id (detachable executions). An accepted
	 * reservation is remembered with the guest that accepted it (`reservedOn`).
	 */
	async reserveExecution(
		signal: AbortSignal,
		executionId?: string,
		onDialed?: (durationMs: number) => void,
	): Promise<Record<string, unknown>> {
		const handle = this.handle
		const reply = await this.request(
			AGENT_OP.reserveExecution,
			executionId === undefined ? {} : { executionId },
			{ signal, onDialed },
		)
		if (reply.ok === true && typeof reply.executionId === 'string') {
			this.#reservations.note(reply.executionId, {
				handle,
				...(typeof reply.guestBootId === 'string' ? { guestBootId: reply.guestBootId } : {}),
			})
		}
		return reply
	}

	/**
	 * The guest that accepted `executionId`'s reservation through this transport: the handle the
	 * request went to and the boot id its reply carried. A verdict about one command is made against
	 * this, never against whatever the transport points at since (another call may have rebound it).
	 * The most recent `RESERVATION_RECORD_LIMIT` reservations are kept.
	 */
	reservedOn(executionId: string): ReservedGuest | undefined {
		return this.#reservations.get(executionId)
	}

	/** The `attach-execution` event stream (observer only); no idle bound, the signal ends it. */
	attachExecution(
		request: AttachExecutionRequest,
		signal: AbortSignal,
	): AsyncGenerator<Record<string, unknown>, void, undefined> {
		return this.stream(AGENT_OP.attachExecution, request, {
			signal,
			idleTimeoutMs: 0,
		})
	}

	/**
	 * Asks the guest to cancel an execution by id; answers its acknowledgement. `fence` (only for
	 * an id an `execute` reserves itself) makes an id the guest has not seen yet cancelled for good.
	 */
	cancelExecution(
		executionId: string,
		signal: AbortSignal,
		onDialed?: (durationMs: number) => void,
		fence = false,
	): Promise<Record<string, unknown>> {
		const body = fence ? { executionId, fence: true } : { executionId }
		return this.request(AGENT_OP.cancelExecution, body, { signal, onDialed })
	}

	/**
	 * The `execute` event stream; no idle bound (a command may be silent), the signal ends it. A
	 * request that reserves its own id is remembered with the guest it went to (no boot id: the
	 * stream carries none).
	 */
	execute(
		request: ExecuteRequest,
		signal: AbortSignal,
		onDialed?: (durationMs: number) => void,
	): AsyncGenerator<Record<string, unknown>, void, undefined> {
		if (request.reserve === true && request.executionId !== undefined) {
			this.#reservations.note(request.executionId, { handle: this.handle })
		}
		return this.stream(AGENT_OP.execute, request, {
			signal,
			idleTimeoutMs: 0,
			onDialed,
			binaryFrames: true,
		})
	}

	// ---- terminals and tcp ----------------------------------------------------------------------

	/** Opens a connection-bound PTY in the guest. */
	async openTerminal(
		request: TerminalRequest,
		signal?: AbortSignal,
	): Promise<AgentTerminalSession> {
		return new AgentTerminalSession(
			await this.#openDuplex(AGENT_OP.terminal, request, signal),
			this.liveness,
		)
	}

	/** Opens a connection to a loopback service inside the guest. */
	async openTcpConnection(
		request: TcpConnectRequest,
		signal?: AbortSignal,
	): Promise<AgentTcpConnection> {
		return new AgentTcpConnection(
			await this.#openDuplex(AGENT_OP.tcpConnect, request, signal),
			this.liveness,
		)
	}
}
