/**
 * The microVM tier's one byte relay (`stream-relay.ts`), run by the real perl: joined to stdin and
 * stdout (QEMU's guestfwd hands connections that way), and accepting on an inherited listening
 * socket (the host's way into the VMM's namespace under allow-all). Half-closes pass through both.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { connect, createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createInheritableLoopbackListenSocket } from '../../src/backends/machine/launch/agent-listen-socket.js'
import { RELAY_PERL, writeStreamRelay } from '../../src/backends/microvm/stream-relay.js'

/** Replies, once the client has ended, with what it got uppercased, then ends. */
function upperOnEnd(): Server {
	return createServer((socket) => {
		let seen = ''
		socket.on('data', (chunk: Buffer) => {
			seen += chunk.toString()
		})
		socket.on('end', () => socket.end(seen.toUpperCase()))
		socket.on('error', () => undefined)
	})
}

function listen(server: Server, options: { path: string } | { port: 0; host: string }) {
	return new Promise<void>((resolve) => server.listen(options, resolve))
}

describe('stream relay', () => {
	let dir = ''
	let relayScript = ''
	const children: ChildProcess[] = []

	beforeAll(async () => {
		dir = await mkdtemp(join(tmpdir(), 'namzu-relay-test-'))
		relayScript = await writeStreamRelay(dir)
	})

	afterAll(async () => {
		for (const child of children) child.kill('SIGKILL')
		await rm(dir, { recursive: true, force: true })
	})

	it('joins stdin/stdout to a unix socket, the half-close passed on both ways', async () => {
		const socketPath = join(dir, 'peer.sock')
		const server = upperOnEnd()
		await listen(server, { path: socketPath })
		const child = spawn(RELAY_PERL, [relayScript, `unix:${socketPath}`], {
			stdio: ['pipe', 'pipe', 'ignore'],
		})
		children.push(child)
		let reply = ''
		child.stdout?.on('data', (chunk: Buffer) => {
			reply += chunk.toString()
		})
		child.stdin?.end('through stdio')
		const code = await new Promise((resolve) => child.once('exit', resolve))
		expect(reply).toBe('THROUGH STDIO')
		expect(code).toBe(0)
		server.close()
	})

	it('accepts on an inherited listening socket, one peer connection per client, concurrently', async () => {
		const server = upperOnEnd()
		await listen(server, { port: 0, host: '127.0.0.1' })
		const address = server.address()
		const peerPort = typeof address === 'object' && address !== null ? address.port : 0
		const listener = await createInheritableLoopbackListenSocket()
		const child = spawn(RELAY_PERL, [relayScript, '--listen-fd3', `tcp:127.0.0.1:${peerPort}`], {
			stdio: ['ignore', 'ignore', 'ignore', listener.fd],
		})
		children.push(child)
		await listener.close()
		const exchange = (text: string) =>
			new Promise<string>((resolve, reject) => {
				const socket = connect(listener.port, '127.0.0.1')
				let reply = ''
				socket.on('data', (chunk: Buffer) => {
					reply += chunk.toString()
				})
				socket.on('end', () => resolve(reply))
				socket.on('error', reject)
				socket.end(text)
			})
		const replies = await Promise.all(['one', 'two', 'three'].map(exchange))
		expect(replies).toEqual(['ONE', 'TWO', 'THREE'])
		// The relay outlives its connections: a later client is served too.
		expect(await exchange('again')).toBe('AGAIN')
		server.close()
	})
})
