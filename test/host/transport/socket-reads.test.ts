/**
 * Shared-buffer socket reads (socket-reads.ts): an agent connection is read into one buffer shared
 * by every connection, so what a sink keeps it must copy; bytes that arrive before any sink is
 * attached are held (reading stops) and handed to the first sink, none lost or reordered.
 */
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { connectWithSharedReads, socketBytesOf } from '../../../src/host/transport/socket-reads.js'

let dir: string
const servers: Server[] = []

beforeEach(async () => {
	dir = await mkdtemp(join(tmpdir(), 'namzu-socket-reads-'))
})

afterEach(async () => {
	for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve))
	await rm(dir, { recursive: true, force: true })
})

/** A peer that writes `bytes` as soon as it accepts, then ends. */
async function peerSending(bytes: Buffer, name = 'peer.sock'): Promise<string> {
	const path = join(dir, name)
	const server = createServer((socket) => socket.end(bytes))
	servers.push(server)
	await new Promise<void>((resolve) => server.listen(path, () => resolve()))
	return path
}

function collect(socket: Socket): Promise<Buffer> {
	const kept: Buffer[] = []
	socketBytesOf(socket).attach((chunk) => kept.push(Buffer.from(chunk)))
	socket.resume()
	return new Promise((resolve) => socket.once('close', () => resolve(Buffer.concat(kept))))
}

describe('shared-buffer socket reads', () => {
	it('two connections read at once each get their own bytes, in order', async () => {
		const first = randomBytes(3 * 1024 * 1024)
		const second = randomBytes(3 * 1024 * 1024)
		const a = connectWithSharedReads({ path: await peerSending(first) })
		const other = connectWithSharedReads({ path: await peerSending(second, 'other.sock') })
		const [gotA, gotB] = await Promise.all([collect(a), collect(other)])
		expect(gotA.equals(first)).toBe(true)
		expect(gotB.equals(second)).toBe(true)
	})

	it('holds what arrives before a sink is attached and hands it over first; byte listeners count it', async () => {
		const sent = randomBytes(1024 * 1024)
		const socket = connectWithSharedReads({ path: await peerSending(sent) })
		const bytes = socketBytesOf(socket)
		let counted = 0
		bytes.onBytes((count) => {
			counted += count
		})
		// No sink yet: the first read is held and reading stops until one is attached.
		await new Promise<void>((resolve) => {
			const check = () => (counted > 0 ? resolve() : setTimeout(check, 10))
			check()
		})
		const got = await collect(socket)
		expect(got.equals(sent)).toBe(true)
		expect(counted).toBe(sent.length)
	})
})
