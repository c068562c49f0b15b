/**
 * The content of a streamed `write-file`: binary `data` frames after the envelope, then one
 * `{ type: 'end' }`. Frames are queued as they arrive and written in order; past
 * `INCOMING_HIGH_WATER_BYTES` queued the connection stops being read until the disk caught up (and
 * is read again as soon as the queue is back at that mark, so the next frame arrives while this
 * one is written), so however large the body the agent holds about that much of it. Every
 * `EARLY_SYNC_BYTES` written, a `datasync` is started without waiting for it: the device takes the
 * bytes while the rest still arrives, instead of all of them in the commit's final `fsync` (which
 * still runs: this only moves work earlier). Each frame's buffer goes back to
 * the reader once its bytes are on disk (releaseBinaryEventBytes), so a long body reuses a few
 * buffers instead of leaving one per frame to the GC. More bytes than `sizeBytes`, an end before
 * them, or any other frame is refused; a connection that closes first fails the write.
 */
import type { FileHandle } from 'node:fs/promises'
import { binaryEventBytes, releaseBinaryEventBytes } from '../../wire/binary-frame.js'
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import type { OpContext } from '../handler/op-context.js'
import { OpRefusal } from '../handler/op-refusal.js'

/** Queued bytes past which the connection is paused. */
export const INCOMING_HIGH_WATER_BYTES = 1024 * 1024
/** Bytes written between two early `datasync`s (one at a time). */
export const EARLY_SYNC_BYTES = 8 * 1024 * 1024

export class IncomingBytes {
	readonly #ctx: OpContext
	readonly #sizeBytes: number
	/** Each queued chunk with the event it came in, whose buffer is released once written. */
	readonly #queue: Array<{ readonly bytes: Buffer; readonly event: Record<string, unknown> }> = []
	#queuedBytes = 0
	#receivedBytes = 0
	#ended = false
	#failure: OpRefusal | Error | undefined
	#wake: (() => void) | undefined

	/** Subscribes at once: frames that arrive before the temp file is open are queued. */
	constructor(ctx: OpContext, sizeBytes: number) {
		this.#ctx = ctx
		this.#sizeBytes = sizeBytes
		ctx.onFrame((message) => this.#onFrame(message))
		ctx.onClose(() => {
			if (!this.#ended) this.#fail(new Error('the connection closed before the end of the body'))
		})
	}

	#onFrame(message: Record<string, unknown>): void {
		if (this.#ended || this.#failure) {
			releaseBinaryEventBytes(message)
			return
		}
		const bytes = binaryEventBytes(message)
		if (bytes !== undefined && message.type === 'data') {
			this.#receivedBytes += bytes.length
			if (this.#receivedBytes > this.#sizeBytes) {
				this.#fail(this.#mismatch(`more than the ${this.#sizeBytes} bytes announced`))
				return
			}
			this.#queue.push({ bytes, event: message })
			this.#queuedBytes += bytes.length
			if (this.#queuedBytes > INCOMING_HIGH_WATER_BYTES) this.#ctx.socket.pause()
		} else if (bytes === undefined && message.type === 'end') {
			if (this.#receivedBytes !== this.#sizeBytes) {
				this.#fail(
					this.#mismatch(
						`${this.#receivedBytes} bytes before the end, ${this.#sizeBytes} announced`,
					),
				)
				return
			}
			this.#ended = true
		} else {
			this.#fail(new OpRefusal(AGENT_REFUSAL.write_stream_unexpected_frame))
			return
		}
		this.#notify()
	}

	#mismatch(detail: string): OpRefusal {
		return new OpRefusal(formatRefusal(AGENT_REFUSAL.write_stream_size_mismatch, detail))
	}

	#fail(error: OpRefusal | Error): void {
		this.#failure ??= error
		this.#notify()
	}

	#notify(): void {
		const wake = this.#wake
		this.#wake = undefined
		wake?.()
	}

	/**
	 * The op settled without taking the rest of the body (a refusal, e.g. the temp file could not
	 * be created): what is queued is dropped and the connection read again, later frames dropped as
	 * they come, so the peer's end of file is seen and the connection closes. Without it a paused
	 * socket would hold the answer's close until the peer gave up.
	 */
	discard(): void {
		this.#failure ??= new Error('the body was discarded')
		for (const queued of this.#queue.splice(0)) releaseBinaryEventBytes(queued.event)
		this.#queuedBytes = 0
		if (!this.#ctx.closed) this.#ctx.socket.resume()
	}

	/** Writes every byte, in order, from offset 0 of `handle`; answers the count once `end` came. */
	async writeTo(handle: FileHandle): Promise<number> {
		const sync = new EarlySync(handle)
		let position = 0
		for (;;) {
			if (this.#failure) throw this.#failure
			sync.wrote(position)
			const queued = this.#queue.shift()
			if (queued === undefined) {
				if (this.#ended) {
					await sync.settled()
					return position
				}
				await new Promise<void>((resolve) => {
					this.#wake = resolve
				})
				continue
			}
			position = await writeChunk(handle, queued.bytes, position)
			this.#queuedBytes -= queued.bytes.length
			// On disk: nothing reads this buffer again, so the reader may fill it with a later frame.
			releaseBinaryEventBytes(queued.event)
			if (this.#queuedBytes <= INCOMING_HIGH_WATER_BYTES && !this.#ctx.closed) {
				this.#ctx.socket.resume()
			}
		}
	}
}

/** Writes all of `chunk` at `position`; answers the position after it. */
async function writeChunk(handle: FileHandle, chunk: Buffer, position: number): Promise<number> {
	let written = 0
	while (written < chunk.length) {
		const at = position + written
		const { bytesWritten } = await handle.write(chunk, written, chunk.length - written, at)
		if (bytesWritten === 0) {
			throw new OpRefusal(
				formatRefusal(AGENT_REFUSAL.write_short_write, `wrote ${at} bytes, then none`),
			)
		}
		written += bytesWritten
	}
	return position + written
}

/**
 * The early `datasync`s of one streamed write: at most one in flight, started once
 * `EARLY_SYNC_BYTES` more were written since the last one began. A failed one fails the write
 * (`settled` throws it), as the final `fsync` would.
 */
class EarlySync {
	readonly #handle: FileHandle
	#startedAt = 0
	#inFlight: Promise<void> | undefined
	#failure: unknown
	#failed = false

	constructor(handle: FileHandle) {
		this.#handle = handle
	}

	/** `position` bytes are written: starts a `datasync` when enough are new and none is running. */
	wrote(position: number): void {
		if (this.#failed) throw this.#failure
		if (this.#inFlight !== undefined || position - this.#startedAt < EARLY_SYNC_BYTES) return
		this.#startedAt = position
		this.#inFlight = this.#handle.datasync().then(
			() => {
				this.#inFlight = undefined
			},
			(error: unknown) => {
				this.#failure = error
				this.#failed = true
			},
		)
	}

	/** Waits for the one in flight; throws if any failed. */
	async settled(): Promise<void> {
		await this.#inFlight
		if (this.#failed) throw this.#failure
	}
}
