/**
 * How the host reads an agent connection. Node's default gives every socket read a fresh buffer
 * (64 KiB) that lives until V8 collects it, so a 64 MiB reply left ~1,000 of them behind and the
 * host spent more time in the garbage collector than in the copy. An agent socket is opened with
 * `onread` into ONE buffer shared by every agent connection of the process instead: each read is
 * handed synchronously to the socket's current sink, which must copy what it keeps before
 * returning (the frame reader always does), and the buffer is read into again. Reads of different
 * sockets never overlap: libuv reads and calls back one stream at a time on this thread.
 *
 * `onread` replaces the socket's `data` events, so everything that reads the connection goes
 * through `SocketBytes`: the vsock preamble, then the frame channel, and byte listeners (liveness).
 * Bytes that arrive while no sink is attached (between the preamble and the channel) are copied
 * and reading stops until a sink takes them, so at most one read is ever held.
 */
import { connect, type NetConnectOpts, type Socket } from 'node:net'

/** The shared read buffer's size: the most one read takes from the kernel. */
export const SHARED_READ_BUFFER_BYTES = 256 * 1024

let sharedBuffer: Buffer | undefined

function sharedReadBuffer(): Buffer {
	sharedBuffer ??= Buffer.allocUnsafeSlow(SHARED_READ_BUFFER_BYTES)
	return sharedBuffer
}

/** Receives each read; `chunk` is only valid until it returns (copy what is kept). */
export type ByteSink = (chunk: Buffer) => void

/**
 * A sink that can name where its next read should land (a large payload's own buffer), so the
 * kernel copies those bytes into place and nothing copies them again.
 */
export interface DirectReads {
	/** The buffer the next read fills (at most its length), or undefined for the shared one. */
	target(): Buffer | undefined
	/** `byteCount` bytes were read into the buffer `target()` answered last. */
	filled(target: Buffer, byteCount: number): void
}

/** The read half of one socket: a sink at a time, byte listeners, the one held read. */
export class SocketBytes {
	#sink: ByteSink | undefined
	#direct: DirectReads | undefined
	/** The direct target the pending read was given, if it was given one. */
	#issued: Buffer | undefined
	#held: Buffer | undefined
	readonly #listeners = new Set<(byteCount: number) => void>()

	/** The `onread` callback: false stops reading (nothing to hand the next read to). */
	deliver(buffer: Uint8Array, byteCount: number): boolean {
		const sink = this.#sink
		const issued = this.#issued
		this.#issued = undefined
		if (issued !== undefined && buffer === issued) this.#direct?.filled(issued, byteCount)
		else {
			const chunk = Buffer.from(buffer.buffer, buffer.byteOffset, byteCount)
			if (sink) sink(chunk)
			else this.#held = this.#held ? Buffer.concat([this.#held, chunk]) : Buffer.from(chunk)
		}
		for (const listener of this.#listeners) listener(byteCount)
		return sink !== undefined
	}

	/** The buffer the next read goes into: the sink's direct target, else the shared one. */
	nextReadBuffer(): Buffer {
		this.#issued = this.#direct?.target()
		return this.#issued ?? sharedReadBuffer()
	}

	/**
	 * Makes `sink` the receiver, handing it any held bytes first. Reading restarts only when the
	 * owner resumes the socket (it may want it paused).
	 */
	attach(sink: ByteSink, direct?: DirectReads): void {
		this.#sink = sink
		this.#direct = direct
		const held = this.#held
		this.#held = undefined
		if (held) sink(held)
	}

	/** No sink from now on; `rest` (bytes the old sink read but did not use) is held for the next. */
	detach(rest?: Buffer): void {
		this.#sink = undefined
		this.#direct = undefined
		if (rest && rest.length > 0) this.#held = Buffer.from(rest)
	}

	/** Calls `listener` with the size of every read; returns the unsubscribe. */
	onBytes(listener: (byteCount: number) => void): () => void {
		this.#listeners.add(listener)
		return () => this.#listeners.delete(listener)
	}
}

const routed = new WeakMap<Socket, SocketBytes>()

/** Connects with shared-buffer reads (see the module comment). */
export function connectWithSharedReads(options: NetConnectOpts): Socket {
	const bytes = new SocketBytes()
	const socket = connect({
		...options,
		onread: {
			// Called before the first read and after every one: where the next read lands.
			buffer: () => bytes.nextReadBuffer(),
			callback: (byteCount, buffer) => bytes.deliver(buffer, byteCount),
		},
	})
	routed.set(socket, bytes)
	return socket
}

/**
 * The read half of `socket`: its shared-buffer reader when it was connected that way, otherwise
 * one built on its `data` events (a socket from elsewhere, e.g. a test's own `connect`).
 */
export function socketBytesOf(socket: Socket): SocketBytes {
	const existing = routed.get(socket)
	if (existing) return existing
	const bytes = new SocketBytes()
	socket.on('data', (chunk: Buffer) => {
		if (!bytes.deliver(chunk, chunk.length)) socket.pause()
	})
	routed.set(socket, bytes)
	return bytes
}
