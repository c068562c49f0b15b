/** Small helpers the egress tests share. */
import { connect as netConnect, type Socket } from 'node:net'
import { type IpAddress, parseIpAddress } from '../../../src/host/egress/ip-address.js'

/** An IP literal that must parse. */
export function ip(text: string): IpAddress {
	const parsed = parseIpAddress(text)
	if (!parsed) throw new Error(`not an IP literal: ${text}`)
	return parsed
}

/** Everything a stream yields until it ends, closes or fails, as UTF-8. */
export function readAll(stream: NodeJS.ReadableStream): Promise<string> {
	return new Promise((resolve) => {
		let text = ''
		stream.on('data', (chunk: Buffer) => {
			text += chunk.toString('utf8')
		})
		for (const event of ['end', 'close', 'error']) stream.on(event, () => resolve(text))
	})
}

/** Sends `head` on the proxy's socket; resolves with the socket once the reply line is in. */
export function bridge(
	socketPath: string,
	head: string,
): Promise<{ socket: Socket; reply: string }> {
	return new Promise((resolve, reject) => {
		const socket = netConnect(socketPath)
		let text = ''
		socket.once('connect', () => socket.write(head))
		const onData = (chunk: Buffer) => {
			text += chunk.toString('latin1')
			const end = text.indexOf('\r\n\r\n')
			if (end < 0) return
			socket.off('data', onData)
			const rest = Buffer.from(text.slice(end + 4), 'latin1')
			if (rest.length > 0) socket.unshift(rest)
			resolve({ socket, reply: text.slice(0, text.indexOf('\r\n')) })
		}
		socket.on('data', onData)
		socket.once('error', reject)
		socket.once('end', () => resolve({ socket, reply: text || 'closed' }))
	})
}

/** Polls `condition` (a backstop of 5 s). */
export async function until(condition: () => boolean): Promise<void> {
	for (let waited = 0; !condition(); waited += 10) {
		if (waited > 5000) throw new Error('condition never held')
		await new Promise((resolve) => setTimeout(resolve, 10))
	}
}
