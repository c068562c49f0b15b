/**
 * How the agent reads a connection it accepted: into reused memory (`common/socket-bytes.ts`), not
 * a fresh 64 KiB buffer per read. Node offers `onread` publicly only to sockets it connects, so for
 * an accepted one its own `onread` state (lib/net.js: the `kBuffer`, `kBufferCb` and `kBufferGen`
 * symbols, and the handle's `useUserBuffer`) is set the way `onread` would have set it, before the
 * first read. Looked up by name and checked, never assumed: where any piece is missing (another
 * Node), the socket is read through `data` events as before, with the same sink.
 */
import type { Socket } from 'node:net'
import { SocketBytes } from '../../common/socket-bytes.js'

/**
 * The shared buffer's size on the agent: Node's own read size, so a pre-auth peer's reads are
 * accounted in the same steps as before (the bulk of a body is read into its own frame buffer).
 */
export const AGENT_SHARED_READ_BYTES = 64 * 1024

function symbolNamed(target: object, name: string): symbol | undefined {
	return Object.getOwnPropertySymbols(target).find((symbol) => symbol.description === name)
}

/** Sets `socket`'s `onread` state to `bytes`; false when this Node's internals differ. */
function adoptOnread(socket: Socket, bytes: SocketBytes): boolean {
	const buffer = symbolNamed(socket, 'kBuffer')
	const callback = symbolNamed(socket, 'kBufferCb')
	const generator = symbolNamed(socket, 'kBufferGen')
	const handle: unknown = Reflect.get(socket, '_handle')
	if (buffer === undefined || callback === undefined || generator === undefined) return false
	if (handle === null || typeof handle !== 'object') return false
	const useUserBuffer: unknown = Reflect.get(handle, 'useUserBuffer')
	// Unset (null) is the state a socket accepted without `onread` has; anything else is not ours.
	if (typeof useUserBuffer !== 'function' || Reflect.get(socket, buffer) !== null) return false
	const first = bytes.nextReadBuffer()
	Reflect.set(socket, buffer, first)
	Reflect.set(socket, generator, () => bytes.nextReadBuffer())
	Reflect.set(socket, callback, (byteCount: number, into: Uint8Array) =>
		bytes.deliver(into, byteCount),
	)
	Reflect.apply(useUserBuffer, handle, [first])
	return true
}

/**
 * The read half of an accepted `socket`, read into reused memory where this Node allows (see the
 * module comment), else from its `data` events. Call it in the connection's first tick, before
 * anything else reads the socket.
 */
export function acceptedSocketBytes(socket: Socket): SocketBytes {
	const bytes = new SocketBytes(AGENT_SHARED_READ_BYTES)
	if (!adoptOnread(socket, bytes)) {
		socket.on('data', (chunk: Buffer) => {
			if (!bytes.deliver(chunk, chunk.length)) socket.pause()
		})
	}
	return bytes
}
