// A TCP front for a real guest agent that records the first frame of every connection (the
// request envelope: op, token, body) and then pipes bytes both ways untouched. It pins what the
// host sends the guest — which op, in what order, one connection per request — without changing
// what the agent does.
import { createConnection, createServer, type Server, type Socket } from 'node:net'
import { FRAME_HEADER_BYTES } from '../../../src/wire/frame.js'

export interface RecordedEnvelope {
	readonly op: string
	readonly token?: string
	readonly body?: Record<string, unknown>
	/** Milliseconds since the proxy started, when the envelope was complete. */
	readonly atMs: number
}

export interface RecordingAgentProxy {
	readonly port: number
	/** One per connection, in arrival order. */
	readonly envelopes: RecordedEnvelope[]
	/** Connections accepted so far. */
	readonly connections: () => number
	close(): Promise<void>
}

export async function startRecordingAgentProxy(
	target: { host: string; port: number },
	/** Called with each envelope as it completes, before its bytes are forwarded. */
	onEnvelope?: (envelope: RecordedEnvelope) => void,
): Promise<RecordingAgentProxy> {
	const started = performance.now()
	const envelopes: RecordedEnvelope[] = []
	const sockets = new Set<Socket>()
	let accepted = 0
	const server: Server = createServer((client) => {
		accepted++
		sockets.add(client)
		const upstream = createConnection(target)
		sockets.add(upstream)
		let head: Buffer | undefined = Buffer.alloc(0)
		client.on('data', (chunk: Buffer) => {
			if (head !== undefined) {
				head = Buffer.concat([head, chunk])
				if (head.length >= FRAME_HEADER_BYTES) {
					const length = Number.parseInt(head.subarray(0, 8).toString('latin1'), 16)
					if (head.length >= FRAME_HEADER_BYTES + length) {
						const payload = head.subarray(FRAME_HEADER_BYTES, FRAME_HEADER_BYTES + length)
						const envelope: RecordedEnvelope = {
							...(JSON.parse(payload.toString('utf8')) as Omit<RecordedEnvelope, 'atMs'>),
							atMs: performance.now() - started,
						}
						envelopes.push(envelope)
						head = undefined
						onEnvelope?.(envelope)
					}
				}
			}
			upstream.write(chunk)
		})
		upstream.on('data', (chunk: Buffer) => client.write(chunk))
		client.on('end', () => upstream.end())
		upstream.on('end', () => client.end())
		const drop = () => {
			client.destroy()
			upstream.destroy()
		}
		client.on('error', drop)
		upstream.on('error', drop)
		// A side that closed cleanly lets the other flush what it still has queued before it ends:
		// destroying it here would cut off the tail of an answer written under backpressure.
		client.on('close', () => {
			sockets.delete(client)
			upstream.end()
		})
		upstream.on('close', () => {
			sockets.delete(upstream)
			client.end()
		})
	})
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
	const address = server.address()
	if (address === null || typeof address === 'string') throw new Error('proxy has no port')
	return {
		port: address.port,
		envelopes,
		connections: () => accepted,
		close: async () => {
			for (const socket of sockets) socket.destroy()
			await new Promise<void>((resolve) => server.close(() => resolve()))
		},
	}
}
