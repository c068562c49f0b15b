import type { Socket } from 'node:net'
import { encodeFrame, parseFramePayload } from '../../src/wire/frame.js'
import { FrameReader } from '../../src/wire/frame-reader.js'
import { type AgentAddress, connectAgent } from '../helpers/raw-agent-client.js'

/**
 * A live connection to the agent for stream ops that need a conversation (terminal, tcp-connect):
 * send frames at any time, wait for an event matching a predicate. Test-only.
 */
export interface AgentStream {
	readonly socket: Socket
	/** Every event received so far, in order. */
	readonly events: Record<string, unknown>[]
	readonly terminated: () => boolean
	send(message: object): void
	/** Resolves with the first event (already received or future) matching `predicate`. */
	waitFor(
		predicate: (event: Record<string, unknown>) => boolean,
		timeoutMs?: number,
	): Promise<Record<string, unknown>>
	/** Resolves once the agent closed the connection. */
	closed(): Promise<void>
	close(): void
}

export function openAgentStream(address: AgentAddress, envelope: object): AgentStream {
	const socket = connectAgent(address)
	const reader = new FrameReader({ maxFrameBytes: 512 * 1024 * 1024, limitVariable: 'test' })
	const events: Record<string, unknown>[] = []
	let terminated = false
	let isClosed = false
	const waiters = new Set<() => void>()
	const wake = () => {
		for (const waiter of [...waiters]) waiter()
	}
	socket.write(encodeFrame(envelope))
	socket.on('data', (chunk: Buffer) => {
		for (const item of reader.push(chunk)) {
			if (item.kind === 'end') terminated = true
			else events.push(parseFramePayload(item.payload))
		}
		wake()
	})
	socket.on('error', () => undefined)
	socket.on('close', () => {
		isClosed = true
		wake()
	})
	return {
		socket,
		events,
		terminated: () => terminated,
		send: (message) => {
			socket.write(encodeFrame(message))
		},
		waitFor: (predicate, timeoutMs = 10_000) =>
			new Promise((resolve, reject) => {
				const check = () => {
					const found = events.find(predicate)
					if (found) {
						cleanup()
						resolve(found)
					} else if (isClosed) {
						cleanup()
						reject(new Error(`stream closed first; events: ${JSON.stringify(events)}`))
					}
				}
				const timer = setTimeout(() => {
					cleanup()
					reject(new Error(`timed out; events: ${JSON.stringify(events).slice(-2000)}`))
				}, timeoutMs)
				const cleanup = () => {
					clearTimeout(timer)
					waiters.delete(check)
				}
				waiters.add(check)
				check()
			}),
		closed: () =>
			new Promise((resolve) => {
				if (isClosed) resolve()
				else socket.once('close', () => resolve())
			}),
		close: () => socket.destroy(),
	}
}
