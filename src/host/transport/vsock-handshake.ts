/**
 * The Firecracker hybrid-vsock preamble: on the host-side unix socket, write `CONNECT <port>\n`
 * and wait for one line starting `OK`. Bytes that arrive after that line already belong to the
 * agent, so they are held for the frame reader (socket-reads.ts).
 */
import type { Socket } from 'node:net'
import { socketBytesOf } from './socket-reads.js'
import { VsockHandshakeError } from './transport-errors.js'

/** Longest acknowledgement line accepted (Firecracker answers `OK <host port>\n`). */
const MAX_ACK_LINE_BYTES = 256

/** Splits the first line off `buffered`; undefined while no newline has arrived. */
export function splitAckLine(buffered: Buffer): { line: string; rest: Buffer } | undefined {
	const newline = buffered.indexOf(0x0a)
	if (newline < 0) return undefined
	return {
		line: buffered.toString('latin1', 0, newline).replace(/\r$/, ''),
		rest: buffered.subarray(newline + 1),
	}
}

/** Runs the handshake on a connected socket; rejects (without destroying it) on refusal or close. */
export function performVsockHandshake(socket: Socket, port: number): Promise<void> {
	return new Promise((resolve, reject) => {
		let buffered = Buffer.alloc(0)
		const bytes = socketBytesOf(socket)
		const cleanup = (rest?: Buffer) => {
			bytes.detach(rest)
			socket.off('close', onClose)
			socket.off('error', onError)
		}
		const fail = (error: Error) => {
			cleanup()
			reject(error)
		}
		const onData = (chunk: Buffer) => {
			buffered = Buffer.concat([buffered, chunk])
			const split = splitAckLine(buffered)
			if (!split) {
				if (buffered.length > MAX_ACK_LINE_BYTES) {
					fail(new VsockHandshakeError('vsock handshake: acknowledgement line too long'))
				}
				return
			}
			if (!split.line.startsWith('OK')) {
				fail(new VsockHandshakeError(`vsock handshake refused: ${split.line.slice(0, 80)}`))
				return
			}
			cleanup(split.rest)
			socket.pause()
			resolve()
		}
		const onClose = () => fail(new VsockHandshakeError('vsock handshake: closed before OK'))
		const onError = (error: Error) => fail(error)
		bytes.attach(onData)
		socket.once('close', onClose)
		socket.once('error', onError)
		socket.write(`CONNECT ${port}\n`)
	})
}
