/**
 * Binds the agent's listener in the configured mode: a unix socket (a stale socket file is removed first), the vsock bridge's inherited
 * descriptor 3, or TCP on 0.0.0.0 with 15 s keep-alive (port 0 = ephemeral). Resolves once bound,
 * with what the agent announces on stdout; rejects if binding fails.
 */
import { fstatSync } from 'node:fs'
import { lstat, unlink } from 'node:fs/promises'
import { createServer, type Server, type Socket } from 'node:net'
import type { ListenMode } from '../handler/config.js'

export type BoundAddress =
	| { readonly kind: 'unix'; readonly path: string }
	| { readonly kind: 'tcp'; readonly port: number }
	| { readonly kind: 'vsock'; readonly port: number }

export interface Listener {
	readonly server: Server
	readonly bound: BoundAddress
}

export const TCP_KEEPALIVE_INITIAL_DELAY_MS = 15_000
const TCP_HOST = '0.0.0.0'

/** The one stdout line a launcher waits for (`listening {"kind":…}`). */
export function listeningLine(bound: BoundAddress): string {
	return `listening ${JSON.stringify(bound)}`
}

/** Removes a leftover unix socket at `path`; anything that is not a socket is left for bind to refuse. */
async function removeStaleSocket(path: string): Promise<void> {
	try {
		if ((await lstat(path)).isSocket()) await unlink(path)
	} catch (error) {
		if (!(error instanceof Error && 'code' in error && error.code === 'ENOENT')) throw error
	}
}

function assertInheritedSocket(fd: number): void {
	let isSocket = false
	try {
		isSocket = fstatSync(fd).isSocket()
	} catch {
		isSocket = false
	}
	if (!isSocket) {
		throw new Error(
			`NAMZU_AGENT_VSOCK_PORT is set but descriptor ${fd} is not an inherited listening socket`,
		)
	}
}

function bind(server: Server, target: Parameters<Server['listen']>[0]): Promise<void> {
	return new Promise((resolve, reject) => {
		const onError = (error: Error) => reject(error)
		server.once('error', onError)
		server.listen(target, () => {
			server.off('error', onError)
			resolve()
		})
	})
}

export async function startListening(
	mode: ListenMode,
	onConnection: (socket: Socket) => void,
): Promise<Listener> {
	const server =
		mode.kind === 'tcp'
			? createServer(
					{ keepAlive: true, keepAliveInitialDelay: TCP_KEEPALIVE_INITIAL_DELAY_MS, noDelay: true },
					onConnection,
				)
			: createServer(onConnection)
	switch (mode.kind) {
		case 'unix':
			await removeStaleSocket(mode.path)
			await bind(server, mode.path)
			return { server, bound: { kind: 'unix', path: mode.path } }
		case 'vsock':
			// The init process bridged vsock to a listening stream socket on this descriptor. Without
			// one, Node's own event-loop descriptor may sit there and listen() fails with a bare EINVAL.
			assertInheritedSocket(mode.fd)
			await bind(server, { fd: mode.fd })
			return { server, bound: { kind: 'vsock', port: mode.port } }
		case 'tcp': {
			await bind(server, { host: TCP_HOST, port: mode.port })
			const address = server.address()
			const port = typeof address === 'object' && address !== null ? address.port : mode.port
			return { server, bound: { kind: 'tcp', port } }
		}
	}
}
