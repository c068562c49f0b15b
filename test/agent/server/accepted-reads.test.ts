/**
 * The agent's accepted connections read into reused memory (accepted-reads.ts): every read that no
 * direct target claims lands in the one shared buffer (so a long body leaves no per-read buffer to
 * the GC), a direct target is filled in place by the kernel, nothing is lost or reordered, and
 * pausing the socket stops the reads until it resumes.
 */
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { connect, createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { acceptedSocketBytes } from '../../../src/agent/server/accepted-reads.js'
import type { SocketBytes } from '../../../src/common/socket-bytes.js'

let dir: string
const servers: Server[] = []
const clients: Socket[] = []

beforeEach(async () => {
	dir = await mkdtemp(join(tmpdir(), 'namzu-accepted-reads-'))
})

afterEach(async () => {
	for (const client of clients.splice(0)) client.destroy()
	for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve))
	await rm(dir, { recursive: true, force: true })
})

/** A server whose accepted sockets are read by `accepted-reads.ts`, and a client connected to it. */
async function acceptedPair(
	onAccepted: (socket: Socket, bytes: SocketBytes) => void,
): Promise<Socket> {
	const path = join(dir, `s-${servers.length}.sock`)
	const server = createServer((socket) => onAccepted(socket, acceptedSocketBytes(socket)))
	servers.push(server)
	await new Promise<void>((resolve) => server.listen(path, () => resolve()))
	const client = connect({ path })
	clients.push(client)
	await new Promise<void>((resolve) => client.once('connect', () => resolve()))
	return client
}

describe("the agent's accepted-socket reads", () => {
	it('reads every chunk into the one shared buffer and loses nothing', async () => {
		const sent = randomBytes(4 * 1024 * 1024)
		const backings = new Set<ArrayBufferLike>()
		const kept: Buffer[] = []
		const done = new Promise<Buffer>((resolve) => {
			void acceptedPair((socket, bytes) => {
				socket.on('close', () => resolve(Buffer.concat(kept)))
				bytes.attach((chunk) => {
					backings.add(chunk.buffer)
					kept.push(Buffer.from(chunk))
				})
			}).then((client) => client.end(sent))
		})
		const got = await done
		expect(got.equals(sent)).toBe(true)
		expect(kept.length).toBeGreaterThan(1)
		// This Node's internals were found: reads reuse one buffer instead of a fresh one each.
		expect(backings.size).toBe(1)
	})

	it("fills a sink's direct target in place and pauses with the socket", async () => {
		const sent = randomBytes(1024 * 1024)
		const target = Buffer.alloc(sent.length)
		let filled = 0
		let direct = 0
		let pausedOnce = false
		let accepted: Socket | undefined
		const client = await acceptedPair((socket, bytes) => {
			accepted = socket
			// The first read was issued at accept, before any target: it comes through the sink.
			bytes.attach(
				(chunk) => {
					chunk.copy(target, filled)
					filled += chunk.length
				},
				{
					target: () => (filled < target.length ? target.subarray(filled) : undefined),
					filled: (into, byteCount) => {
						expect(into.byteOffset).toBe(target.byteOffset + filled)
						filled += byteCount
						direct++
						if (!pausedOnce && filled >= 256 * 1024 && filled < target.length) {
							pausedOnce = true
							socket.pause()
						}
					},
				},
			)
		})
		client.write(sent)
		await waitFor(() => filled >= 256 * 1024)
		const paused = filled
		// Paused: nothing more is read however long we wait for the loop to turn over.
		await new Promise((resolve) => setTimeout(resolve, 50))
		expect(filled).toBe(paused)
		accepted?.resume()
		await waitFor(() => filled === target.length)
		expect(target.equals(sent)).toBe(true)
		expect(direct).toBeGreaterThan(0)
	})
})

async function waitFor(condition: () => boolean): Promise<void> {
	const deadline = Date.now() + 30_000
	while (!condition()) {
		if (Date.now() > deadline) throw new Error('condition not met within 30 s')
		await new Promise((resolve) => setTimeout(resolve, 5))
	}
}
