/**
 * One connection to the agent seen as a queue of parsed items: frames, the zero-length stream
 * terminator, and finally `closed` (with the failure, if the connection did not end cleanly).
 * The reader is pull-based so a slow consumer pauses the socket instead of buffering without
 * bound: at most `QUEUE_HIGH_WATER` items or `QUEUE_HIGH_WATER_BYTES` of payload wait before the
 * socket is paused, no frame may announce more than the op's ceiling, and no JSON frame reaches
 * `JSON.parse` past the op's depth, value and size bounds (`wire/reply-bounds.ts`) — so what one
 * connection can make the host hold, and how long one frame can hold its event loop, is bounded by
 * the host, whatever the guest sends. `exchange.ts` applies the request and stream rules.
 */
import type { Socket } from 'node:net'
import type { SocketBytes } from '../../common/socket-bytes.js'
import {
	type BinaryChannel,
	binaryEvent,
	encodeBinaryFrameHeader,
} from '../../wire/binary-frame.js'
import { encodeFrame, FrameError, parseFramePayload } from '../../wire/frame.js'
import { type BinaryPlacement, type FrameItem, FrameReader } from '../../wire/frame-reader.js'
import { JsonShapeError } from '../../wire/json-shape.js'
import { replyBoundsOf } from '../../wire/reply-bounds.js'
import { RemoteProtocolError, RemoteReplyBoundError } from '../refusals/refusal-errors.js'
import { HOST_READ_FRAME_LIMIT_BYTES } from './agent-transport-options.js'
import { socketBytesOf } from './socket-reads.js'
import { AgentConnectionError, AgentReadTimeoutError } from './transport-errors.js'

/** What a channel read yields: a frame, the end, or the failure that ended it. */
export type ChannelItem =
	| { readonly kind: 'frame'; readonly message: Record<string, unknown> }
	| { readonly kind: 'end' }
	| { readonly kind: 'closed'; readonly error?: Error }

/** Parsed items held before the socket is paused. */
const QUEUE_HIGH_WATER = 32
/** Payload bytes of parsed items held before the socket is paused. */
export const QUEUE_HIGH_WATER_BYTES = 8 * 1024 * 1024

interface Queued {
	readonly item: ChannelItem
	readonly bytes: number
}

/** What a frame the reader or the parser refused becomes: a bound by name, else a broken frame. */
function malformedFrameError(op: string, error: unknown): RemoteProtocolError {
	const detail = error instanceof Error ? error.message : String(error)
	const shape = error instanceof FrameError ? error.cause : error
	if (shape instanceof JsonShapeError) {
		return new RemoteReplyBoundError(op, shape.bound, shape.limit, shape.message, error)
	}
	// Only a header over the ceiling carries the limit it broke.
	if (error instanceof FrameError && error.limitBytes !== undefined) {
		return new RemoteReplyBoundError(op, 'frame-bytes', error.limitBytes, detail, error)
	}
	return new RemoteProtocolError(`${op}: the guest sent a malformed frame: ${detail}`, {
		cause: error,
	})
}

/** One agent connection as a queue of frames with back-pressure and bounded reads. */
export class FrameChannel {
	readonly op: string
	/** Whether this connection negotiated binary data frames (both ways). */
	readonly binary: boolean
	readonly #socket: Socket
	readonly #bytes: SocketBytes
	readonly #reader: FrameReader
	readonly #queue: Queued[] = []
	#queuedBytes = 0
	#waiter: ((item: ChannelItem) => void) | undefined
	#failure: Error | undefined
	#closed = false
	#heldByConsumer = false
	#sawTerminator = false
	readonly #closedPromise: Promise<void>

	/**
	 * Every frame is held to `op`'s reply bounds (`wire/reply-bounds.ts`): its frame ceiling, which
	 * `maxFrameBytes` replaces for a call that knows its answer's size (never above
	 * `HOST_READ_FRAME_LIMIT_BYTES`), and the JSON bounds, scanned as the bytes arrive. `binary`: the
	 * request asked for binary frames, so the guest may answer with them; otherwise a binary header
	 * fails the channel before its payload is read. `place`: where large binary payloads are read
	 * into instead of lent buffers (frame-reader.ts), straight from the socket.
	 */
	constructor(
		socket: Socket,
		op: string,
		maxFrameBytes?: number,
		binary = false,
		place?: BinaryPlacement,
	) {
		this.#socket = socket
		this.op = op
		this.binary = binary
		const bounds = replyBoundsOf(op)
		this.#reader = new FrameReader({
			maxFrameBytes: Math.min(maxFrameBytes ?? bounds.frameBytes, HOST_READ_FRAME_LIMIT_BYTES),
			limitVariable: `the host's ${op} frame ceiling`,
			binary,
			json: bounds.json,
			...(place ? { place } : {}),
		})
		this.#closedPromise = new Promise((resolve) => socket.once('close', () => resolve()))
		this.#bytes = socketBytesOf(socket)
		this.#bytes.attach((chunk) => this.#onData(chunk), {
			target: () => (this.#closed || this.#failure ? undefined : this.#reader.readTarget()),
			filled: (target, byteCount) => this.#onRead(target, byteCount),
		})
		socket.on('error', (error: Error) => {
			this.#failure ??= new AgentConnectionError(op, { cause: error })
		})
		socket.once('close', () => this.#onClose())
		socket.on('timeout', () => {
			this.fail(new AgentReadTimeoutError(op, socket.timeout ?? 0))
		})
		socket.resume()
	}

	/** Resolves once the socket has fully closed. Never rejects. */
	get closed(): Promise<void> {
		return this.#closedPromise
	}

	get isClosed(): boolean {
		return this.#closed
	}

	/** Whether the peer sent the stream terminator (whether or not it has been read yet). */
	get sawTerminator(): boolean {
		return this.#sawTerminator
	}

	/** Arms (or with 0 disarms) the idle timeout: silence that long fails the channel. */
	setIdleTimeout(ms: number): void {
		this.#socket.setTimeout(ms)
	}

	/** Sends one frame. False means the socket wants the writer to wait for `drain`. */
	send(message: unknown): boolean {
		return this.sendEncoded(encodeFrame(message))
	}

	/** Sends one already-encoded frame; false as for `send`. */
	sendEncoded(frame: Buffer): boolean {
		if (this.#socket.destroyed || !this.#socket.writable) return false
		return this.#socket.write(frame)
	}

	/**
	 * Sends `bytes` as one binary data frame (only on a channel that negotiated them); false as for
	 * `send`. `bytes` must not change until written.
	 */
	sendBinary(channel: BinaryChannel, bytes: Uint8Array): boolean {
		if (!this.binary)
			throw new Error(`${this.op}: binary frame on a channel that did not ask for them`)
		if (this.#socket.destroyed || !this.#socket.writable) return false
		this.#socket.cork()
		this.#socket.write(encodeBinaryFrameHeader(channel, bytes.byteLength))
		const flowing = this.#socket.write(bytes)
		this.#socket.uncork()
		return flowing
	}

	/** Calls `listener` on the socket's next `drain`; returns the unsubscribe. */
	onDrain(listener: () => void): () => void {
		this.#socket.on('drain', listener)
		return () => this.#socket.off('drain', listener)
	}

	/** Resolves on the socket's next `drain`, or when `other` settles first. */
	drainedOr(other: Promise<void>): Promise<void> {
		let stop: () => void = () => {}
		const drained = new Promise<void>((resolve) => {
			stop = this.onDrain(() => resolve())
		})
		return Promise.race([drained, other]).finally(() => stop())
	}

	/** Every chunk of bytes received (liveness counts bytes, not frames). Returns an unsubscribe. */
	onBytes(listener: (byteCount: number) => void): () => void {
		return this.#bytes.onBytes(listener)
	}

	/** Whether reading is paused for backpressure (queue full or held by the consumer). */
	get readingPaused(): boolean {
		return this.#socket.isPaused()
	}

	/** Consumer-level flow control (e.g. a tcp connection's `pause()`). */
	hold(): void {
		this.#heldByConsumer = true
		this.#socket.pause()
	}

	/** Ends `hold()`: reading resumes unless the queue is full. */
	release(): void {
		this.#heldByConsumer = false
		if (!this.#queueFull) this.#socket.resume()
	}

	get #queueFull(): boolean {
		return this.#queue.length >= QUEUE_HIGH_WATER || this.#queuedBytes >= QUEUE_HIGH_WATER_BYTES
	}

	/** Half-closes our side. */
	end(): void {
		if (!this.#socket.destroyed) this.#socket.end()
	}

	/** Tears the connection down, recording why (the first reason wins). */
	fail(error: Error): void {
		this.#failure ??= error
		this.#socket.destroy()
	}

	/** Tears the connection down as a normal end of use. */
	destroy(): void {
		this.#socket.destroy()
	}

	/** Ties the channel to a signal: aborting destroys the connection with the signal's reason. */
	bindSignal(signal: AbortSignal | undefined): () => void {
		if (!signal) return () => {}
		const onAbort = () => {
			const reason: unknown = signal.reason
			this.fail(reason instanceof Error ? reason : new DOMException('aborted', 'AbortError'))
		}
		if (signal.aborted) {
			onAbort()
			return () => {}
		}
		signal.addEventListener('abort', onAbort, { once: true })
		return () => signal.removeEventListener('abort', onAbort)
	}

	/**
	 * The next item, or `timeout` after `timeoutMs` (when given) with nothing queued. After
	 * `closed` every call answers `closed` again.
	 */
	read(timeoutMs?: number): Promise<ChannelItem | { readonly kind: 'timeout' }> {
		const queued = this.#queue.shift()
		if (queued) {
			if (queued.item.kind === 'closed') this.#queue.unshift(queued)
			else {
				this.#queuedBytes -= queued.bytes
				if (!this.#heldByConsumer && !this.#queueFull) this.#socket.resume()
			}
			return Promise.resolve(queued.item)
		}
		return new Promise((resolve) => {
			const timer =
				timeoutMs === undefined
					? undefined
					: setTimeout(() => {
							this.#waiter = undefined
							resolve({ kind: 'timeout' })
						}, timeoutMs)
			this.#waiter = (item) => {
				if (timer) clearTimeout(timer)
				resolve(item)
			}
		})
	}

	#push(item: ChannelItem, bytes = 0): void {
		const waiter = this.#waiter
		if (waiter) {
			this.#waiter = undefined
			if (item.kind === 'closed') this.#queue.push({ item, bytes: 0 })
			waiter(item)
			return
		}
		this.#queue.push({ item, bytes })
		this.#queuedBytes += bytes
		if (this.#queueFull) this.#socket.pause()
	}

	#onData(chunk: Buffer): void {
		if (this.#closed || this.#failure) return
		this.#take(() => this.#reader.push(chunk))
	}

	/** Bytes the socket read straight into the reader's `readTarget()`. */
	#onRead(target: Buffer, byteCount: number): void {
		if (this.#closed || this.#failure) return
		this.#take(() => this.#reader.pushRead(target, byteCount))
	}

	/** Queues the items `read` completes; a framing or bound failure fails the channel. */
	#take(read: () => FrameItem[]): void {
		try {
			for (const item of read()) {
				if (item.kind === 'end') {
					this.#sawTerminator = true
					this.#push({ kind: 'end' })
				} else if (item.kind === 'binary') {
					const message = { ...binaryEvent(item.channel, item.payload, item.release) }
					this.#push({ kind: 'frame', message }, item.payload.length)
				} else {
					const message = parseFramePayload(item.payload, item.shape)
					this.#push({ kind: 'frame', message }, item.payload.length)
				}
			}
		} catch (error) {
			this.fail(malformedFrameError(this.op, error))
		}
	}

	#onClose(): void {
		this.#closed = true
		let error = this.#failure
		if (!error && this.#reader.bufferedBytes > 0) {
			error = new RemoteProtocolError(
				`${this.op}: the guest closed the connection inside a frame (${this.#reader.bufferedBytes} stray bytes)`,
			)
		}
		this.#push(error ? { kind: 'closed', error } : { kind: 'closed' })
	}
}
