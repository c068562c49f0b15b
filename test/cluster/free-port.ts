// Picks an ephemeral loopback port by binding port 0 and releasing it. There is a window in which
// another process could take it; the cluster starter retries a component whose port was taken.
import { createServer } from 'node:net'

export function freePort(signal?: AbortSignal): Promise<number> {
	return new Promise((resolve, reject) => {
		signal?.throwIfAborted()
		const server = createServer()
		server.unref()
		server.on('error', reject)
		server.listen(0, '127.0.0.1', () => {
			const address = server.address()
			const port = typeof address === 'object' && address !== null ? address.port : 0
			server.close(() => (port > 0 ? resolve(port) : reject(new Error('no port assigned'))))
		})
	})
}
