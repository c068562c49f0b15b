/**
 * The read half of one socket read through `onread` into reused memory instead of Node's default (a
 * fresh 64 KiB buffer per read that lives until V8 collects it: a 64 MiB reply left ~1,000 of them
 * behind on the host, and a 1 GiB body about 40 MiB of them on the agent). Each read lands in one
 * buffer shared by every such socket of the process, or in the buffer the sink names for it (a
 * large payload's own, so the kernel copies those bytes into place and nothing copies them again),
 * and is handed synchronously to the socket's current sink, which must copy what it keeps before
 * returning. Reads of different sockets never overlap: libuv reads and calls back one stream at a
 * time on this thread. Both ends use it: the host on the sockets it connects
 * (`host/transport/socket-reads.ts`), the agent on the ones it accepts (`agent/server/`).
 *
 * Bytes that arrive while no sink is attached (the host, between a vsock preamble and the frame
 * channel) are copied and reading stops until a sink takes them, so at most one read is ever held.
 */

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

const sharedBuffers = new Map<number, Buffer>()

/** The process's one shared read buffer of `bytes` (one per size asked for; each ends allocate one). */
function sharedReadBuffer(bytes: number): Buffer {
	let buffer = sharedBuffers.get(bytes)
	if (buffer === undefined) {
		buffer = Buffer.allocUnsafeSlow(bytes)
		sharedBuffers.set(bytes, buffer)
	}
	return buffer
}

/** The read half of one socket: a sink at a time, byte listeners, the one held read. */
export class SocketBytes {
	readonly #sharedBytes: number
	#sink: ByteSink | undefined
	#direct: DirectReads | undefined
	/** The direct target the pending read was given, if it was given one. */
	#issued: Buffer | undefined
	#held: Buffer | undefined
	readonly #listeners = new Set<(byteCount: number) => void>()

	/** `sharedBytes`: the shared buffer's size, the most one read takes from the kernel. */
	constructor(sharedBytes: number) {
		this.#sharedBytes = sharedBytes
	}

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
		return this.#issued ?? sharedReadBuffer(this.#sharedBytes)
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
