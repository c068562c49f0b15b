import { connect, type Socket } from 'node:net'
import { encodeFrame, parseFramePayload } from '../../src/wire/frame.js'
import { FrameReader } from '../../src/wire/frame-reader.js'

export interface AgentAddress {
	readonly socketPath?: string
	readonly port?: number
}

export interface RawExchange {
	/** Every frame the agent sent, parsed, in order. */
	readonly frames: Record<string, unknown>[]
	/** Whether the zero-length terminator arrived. */
	readonly terminated: boolean
	/** How the connection ended. */
	readonly closedBy: 'end' | 'error' | 'timeout'
}

export function connectAgent(address: AgentAddress): Socket {
	if (address.socketPath) return connect(address.socketPath)
	if (address.port !== undefined) return connect({ host: '127.0.0.1', port: address.port })
	throw new Error('agent address has neither socketPath nor port')
}

/**
 * Sends one envelope (or raw bytes) on a fresh connection and collects everything the agent
 * answers until it closes. Test-only: the library's transport lives in src/host.
 */
export function rawRequest(
	address: AgentAddress,
	envelope: object | Buffer,
	options: { timeoutMs?: number; afterConnect?: (socket: Socket) => void } = {},
): Promise<RawExchange> {
	return new Promise((resolve) => {
		const socket = connectAgent(address)
		const reader = new FrameReader({ maxFrameBytes: 512 * 1024 * 1024, limitVariable: 'test' })
		const frames: Record<string, unknown>[] = []
		let terminated = false
		let settled = false
		const finish = (closedBy: RawExchange['closedBy']) => {
			if (settled) return
			settled = true
			clearTimeout(timer)
			socket.destroy()
			resolve({ frames, terminated, closedBy })
		}
		const timer = setTimeout(() => finish('timeout'), options.timeoutMs ?? 10_000)
		socket.on('connect', () => {
			socket.write(Buffer.isBuffer(envelope) ? envelope : encodeFrame(envelope))
			options.afterConnect?.(socket)
		})
		socket.on('data', (chunk: Buffer) => {
			for (const item of reader.push(chunk)) {
				if (item.kind === 'end') terminated = true
				else frames.push(parseFramePayload(item.payload))
			}
		})
		socket.on('end', () => finish('end'))
		socket.on('close', () => finish('end'))
		socket.on('error', () => finish('error'))
	})
}
