/**
 * How the host reads an agent connection: opened with `onread` into the process's shared read
 * buffer (`common/socket-bytes.ts` says why and what a sink must do). `onread` replaces the
 * socket's `data` events, so everything that reads the connection goes through `SocketBytes`: the
 * vsock preamble, then the frame channel, and byte listeners (liveness).
 */
import { connect, type NetConnectOpts, type Socket } from 'node:net'
import { SocketBytes } from '../../common/socket-bytes.js'

/** The shared read buffer's size: the most one read takes from the kernel. */
export const SHARED_READ_BUFFER_BYTES = 256 * 1024

const routed = new WeakMap<Socket, SocketBytes>()

/** Connects with shared-buffer reads (see the module comment). */
export function connectWithSharedReads(options: NetConnectOpts): Socket {
	const bytes = new SocketBytes(SHARED_READ_BUFFER_BYTES)
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
	const bytes = new SocketBytes(SHARED_READ_BUFFER_BYTES)
	socket.on('data', (chunk: Buffer) => {
		if (!bytes.deliver(chunk, chunk.length)) socket.pause()
	})
	routed.set(socket, bytes)
	return bytes
}
