// A TCP relay between the host and a real guest agent that passes every byte through unchanged
// and records, per connection, the frames each side sent: the open request (op and body) the
// host asked with, the `ready` the guest answered, and every later frame in either direction
// (heartbeats included). Framing is read with the wire's own FrameReader; a binary data frame is
// recorded as `{ binary: <channel>, byteLength }`; a connection whose bytes stop parsing is still
// relayed, just no longer recorded.
import { createConnection, createServer, type Server, type Socket } from 'node:net'
import { parseFramePayload } from '../../src/wire/frame.js'
import { FrameReader } from '../../src/wire/frame-reader.js'
import { spliceTunnel } from '../../src/wire/tunnel-splice.js'

export type Frame = Record<string, unknown>

export interface RelayedConnection {
	/** Frames the host sent, the envelope (`{ op, body, token? }`) first. */
	readonly fromHost: Frame[]
	/** Frames the guest sent, `ready` first for a stream. */
	readonly fromGuest: Frame[]
}

export interface FrameRecordingRelay {
	readonly port: number
	readonly connections: RelayedConnection[]
	/** The connections whose envelope named `op` (`terminal`, `tcp-connect`, …). */
	opened(op: string): RelayedConnection[]
	close(): Promise<void>
}

function recorder(into: Frame[]): (chunk: Buffer) => void {
	const reader = new FrameReader({
		maxFrameBytes: 512 * 1024 * 1024,
		limitVariable: 'relay',
		binary: true,
	})
	let broken = false
	return (chunk) => {
		if (broken) return
		try {
			for (const item of reader.push(chunk)) {
				if (item.kind === 'frame') into.push(parseFramePayload(item.payload))
				if (item.kind === 'binary') {
					into.push({ binary: item.channel, byteLength: item.payload.length })
				}
			}
		} catch {
			broken = true
		}
	}
}

export async function startFrameRecordingRelay(targetPort: number): Promise<FrameRecordingRelay> {
	const connections: RelayedConnection[] = []
	const sockets = new Set<Socket>()
	const track = (socket: Socket): Socket => {
		sockets.add(socket)
		socket.on('close', () => sockets.delete(socket))
		socket.on('error', () => {})
		return socket
	}
	const server: Server = createServer((host) => {
		track(host)
		const guest = track(createConnection({ host: '127.0.0.1', port: targetPort }))
		const connection: RelayedConnection = { fromHost: [], fromGuest: [] }
		connections.push(connection)
		const hostFrames = recorder(connection.fromHost)
		const guestFrames = recorder(connection.fromGuest)
		host.on('data', hostFrames)
		guest.on('data', guestFrames)
		spliceTunnel(host, guest)
	})
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
	const address = server.address()
	if (address === null || typeof address === 'string') throw new Error('relay has no port')
	return {
		port: address.port,
		connections,
		opened: (op) => connections.filter((connection) => connection.fromHost[0]?.op === op),
		close: async () => {
			for (const socket of sockets) socket.destroy()
			await new Promise<void>((resolve) => server.close(() => resolve()))
		},
	}
}
