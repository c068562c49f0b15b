/**
 * The agent's listening socket, created by the HOST and handed to the agent as descriptor 3.
 *
 * Why not let the agent bind a path inside the sandbox: that directory would have to be writable
 * from inside, so sandboxed code could replace the socket with a symlink to any other unix socket
 * on the host, and the host would dial it. Here the socket file lives in a host directory the
 * sandbox never sees; the agent only holds an already-listening descriptor (its "inherited
 * descriptor" listen mode, `NAMZU_AGENT_VSOCK_PORT`).
 *
 * A relay in another network namespace gets the same kind of descriptor on the host's loopback
 * (`createInheritableLoopbackListenSocket`): a socket keeps the namespace it was made in, so what
 * the relay accepts arrives from this host's 127.0.0.1 whatever namespace the relay runs in.
 */
import { rename } from 'node:fs/promises'
import { createServer, type ListenOptions, type Server } from 'node:net'

export interface InheritableListenSocket {
	/** Descriptor to place at index 3 of the child's stdio. */
	readonly fd: number
	/**
	 * Once the child holds the descriptor: moves the socket file to its final path and closes the
	 * host's copy, so only the agent accepts. (Closing a unix server unlinks the name it bound, so
	 * the file is renamed away first.)
	 */
	handOver(): Promise<void>
	/** Closes the host's copy without publishing (a launch that failed). */
	discard(): Promise<void>
}

function descriptorOf(server: Server): number {
	// net.Server exposes no public accessor for its descriptor; the handle's `fd` is stable on POSIX.
	const handle: unknown = Reflect.get(server, '_handle')
	const fd = handle !== null && typeof handle === 'object' ? Reflect.get(handle, 'fd') : undefined
	if (typeof fd !== 'number' || fd < 0) {
		throw new Error('cannot obtain the listening socket descriptor from node:net on this platform')
	}
	return fd
}

function close(server: Server): Promise<void> {
	return new Promise((resolve) => server.close(() => resolve()))
}

/** A listening server whose connections only the child that inherits it accepts. */
async function listeningServer(options: ListenOptions): Promise<Server> {
	const server = createServer()
	// Connections must reach the child's accept(), never ours.
	server.on('connection', (socket) => socket.destroy())
	await new Promise<void>((resolve, reject) => {
		server.once('error', reject)
		server.listen({ ...options, backlog: 511 }, () => {
			server.off('error', reject)
			resolve()
		})
	})
	return server
}

export async function createInheritableListenSocket(
	finalPath: string,
): Promise<InheritableListenSocket> {
	const bindPath = `${finalPath}.bind`
	const server = await listeningServer({ path: bindPath })
	const fd = descriptorOf(server)
	let closed = false
	return {
		fd,
		async handOver() {
			if (closed) return
			closed = true
			await rename(bindPath, finalPath)
			await close(server)
		},
		async discard() {
			if (closed) return
			closed = true
			await close(server)
		},
	}
}

export interface InheritableLoopbackListenSocket {
	/** Descriptor to place at index 3 of the child's stdio. */
	readonly fd: number
	/** The port on 127.0.0.1 (chosen by the kernel, so no other listener can race for it). */
	readonly port: number
	/** Closes the host's copy once the child holds the descriptor (or a launch failed). */
	close(): Promise<void>
}

/** A listening TCP socket on 127.0.0.1 for a child to inherit as descriptor 3. */
export async function createInheritableLoopbackListenSocket(): Promise<InheritableLoopbackListenSocket> {
	const server = await listeningServer({ host: '127.0.0.1', port: 0 })
	const address = server.address()
	const port = typeof address === 'object' && address !== null ? address.port : 0
	let closing: Promise<void> | undefined
	return {
		fd: descriptorOf(server),
		port,
		close: () => {
			closing ??= close(server)
			return closing
		},
	}
}
