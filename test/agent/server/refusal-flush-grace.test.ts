import { once } from 'node:events'
import { type AddressInfo, connect, createServer, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { refuseAndDestroy } from '../../../src/agent/server/socket-refusal.js'

/**
 * NAMZU_AGENT_REFUSAL_FLUSH_GRACE_MS is a backstop for a peer that has stopped reading: the refusal
 * frame cannot reach the wire, and the socket must be destroyed anyway once the grace passes.
 * Exercised on a real TCP socket pair whose reader never reads.
 */
const cleanups: Array<() => void> = []
afterEach(() => {
	for (const cleanup of cleanups.splice(0)) cleanup()
})

async function stalledPair(): Promise<{ agentSide: Socket; peer: Socket }> {
	const server = createServer()
	server.listen(0, '127.0.0.1')
	await once(server, 'listening')
	const { port } = server.address() as AddressInfo
	const accepted = once(server, 'connection')
	const peer = connect(port, '127.0.0.1')
	peer.pause() // a peer that never reads
	const [agentSide] = (await accepted) as [Socket]
	cleanups.push(() => {
		peer.destroy()
		agentSide.destroy()
		server.close()
	})
	// Fill the kernel buffers and then Node's own queue, so nothing more can be flushed.
	const filler = Buffer.alloc(1024 * 1024)
	while (agentSide.write(filler)) {
		/* keep writing until the socket reports backpressure */
	}
	for (let i = 0; i < 16; i++) agentSide.write(filler)
	return { agentSide, peer }
}

describe('the refusal flush grace', () => {
	it('destroys a socket whose peer stopped reading once the grace passes, without the frame flushing', async () => {
		const { agentSide } = await stalledPair()
		const started = performance.now()
		const unflushedBefore = agentSide.writableLength
		refuseAndDestroy(agentSide, { ok: false, error: 'unauthorized' }, 150)
		await once(agentSide, 'close')
		expect(unflushedBefore).toBeGreaterThan(0)
		expect(agentSide.destroyed).toBe(true)
		// Closed by the grace timer, not by a flush that could never happen (no speed asserted).
		expect(performance.now() - started).toBeGreaterThanOrEqual(140)
	})

	it('destroys at once, without waiting the grace, when the refusal frame flushes', async () => {
		const server = createServer((socket) => {
			refuseAndDestroy(socket, { ok: false, error: 'unauthorized' }, 60_000)
		})
		server.listen(0, '127.0.0.1')
		await once(server, 'listening')
		cleanups.push(() => server.close())
		const { port } = server.address() as AddressInfo
		const peer = connect(port, '127.0.0.1')
		let received = ''
		peer.on('data', (chunk: Buffer) => {
			received += chunk.toString()
		})
		await once(peer, 'close')
		expect(received).toContain('"error":"unauthorized"')
	})
})
