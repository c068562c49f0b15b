/**
 * A `SandboxTcpConnection` over one `tcp-connect` connection that has answered `ready`. Bytes go
 * out base64-encoded in `data` frames (at most `TCP_FRAME_DATA_BYTES` decoded each); `pause()`
 * stops reading the socket, so backpressure reaches the guest; `closed` resolves once the
 * connection is gone — and rejects with the `GuestDiedError` only when it was lost because the
 * guest itself died (`GuestLiveness`). `close()` is the owner's teardown.
 */
import type { SandboxTcpConnection } from '../../contract/sandbox.js'
import { binaryEventBytes } from '../../wire/binary-frame.js'
import type { FrameChannel } from './frame-channel.js'
import type { GuestLiveness } from './guest-liveness.js'
import { ListenerSet } from './listener-set.js'

/** Decoded bytes per outgoing frame (the guest accepts at most 8 MiB). */
export const TCP_FRAME_DATA_BYTES = 1024 * 1024

/** A TCP connection into the guest, carried as frames over one agent connection. */
export class AgentTcpConnection implements SandboxTcpConnection {
	readonly closed: Promise<void>
	readonly #channel: FrameChannel
	readonly #data = new ListenerSet<Buffer>((chunk) => chunk.byteLength)
	#paused = false
	#resume: (() => void) | undefined
	#ended = false
	/** The host let the connection go. */
	#released = false

	constructor(channel: FrameChannel, liveness?: GuestLiveness) {
		this.#channel = channel
		this.closed = channel.closed.then(async () => {
			const orderly = this.#released || channel.sawTerminator
			const died = orderly ? undefined : await liveness?.explain()
			if (died) throw died
		})
		// A caller that never looks at `closed` must not see an unhandled rejection.
		this.closed.catch(() => undefined)
		void this.#pump()
	}

	write(data: string | Uint8Array): boolean {
		if (this.#ended || this.#channel.isClosed) return false
		const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data)
		let flowing = true
		for (let offset = 0; offset < bytes.length; offset += TCP_FRAME_DATA_BYTES) {
			const slice = bytes.subarray(offset, offset + TCP_FRAME_DATA_BYTES)
			flowing = this.#channel.binary
				? this.#channel.sendBinary('data', slice)
				: this.#channel.send({ type: 'data', data: slice.toString('base64') })
		}
		return flowing
	}

	end(): void {
		if (this.#ended) return
		this.#ended = true
		this.#channel.send({ type: 'end' })
	}

	destroy(): void {
		this.#released = true
		this.#channel.send({ type: 'destroy' })
		this.#channel.destroy()
	}

	pause(): void {
		this.#paused = true
		this.#channel.hold()
	}

	resume(): void {
		this.#paused = false
		this.#channel.release()
		const resume = this.#resume
		this.#resume = undefined
		resume?.()
	}

	/** Chunks are `Buffer`s (the contract's `Uint8Array`, with Node's `toString()`). */
	onData(listener: (chunk: Buffer) => void): () => void {
		return this.#data.subscribe(listener)
	}

	onDrain(listener: () => void): () => void {
		return this.#channel.onDrain(listener)
	}

	/** Owner's teardown: destroy and await the close. */
	async close(): Promise<void> {
		this.destroy()
		await this.closed.catch(() => undefined)
	}

	async #pump(): Promise<void> {
		for (;;) {
			if (this.#paused) {
				await new Promise<void>((resolve) => {
					this.#resume = resolve
				})
			}
			const item = await this.#channel.read()
			if (item.kind === 'closed') return
			if (item.kind !== 'frame') continue
			const event = item.message
			const bytes = binaryEventBytes(event)
			if (event.type === 'data' && bytes) {
				this.#data.emit(bytes)
			} else if (event.type === 'data' && typeof event.data === 'string') {
				this.#data.emit(Buffer.from(event.data, 'base64'))
			} else if (event.type === 'error') {
				this.#channel.destroy()
			}
		}
	}
}
