/**
 * `exposePort` on a real local sandbox: a python `http.server` and a WebSocket echo inside the
 * guest, reached through the host-loopback URL with Node's own `fetch` and a raw WebSocket
 * client. The token is required (missing or wrong: `401`) and never reaches the guest; `auth:
 * false` serves without it; `close()` and the sandbox's `destroy()` release the listener; one
 * connection past `maxConnections` is answered `503`, naming the limit.
 */
import { createHash, randomBytes } from 'node:crypto'
import { request } from 'node:http'
import { connect, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { LocalSandbox } from '../../../src/backends/local/index.js'
import { SandboxArgumentError, SandboxDestroyedError } from '../../../src/contract/errors.js'
import type { SandboxExposedPort } from '../../../src/contract/sandbox.js'
import { bwrapSkipReason } from './bwrap-available.js'
import { useLocalProvider } from './local-test-support.js'

const skip = bwrapSkipReason()
const HTTP_PORT = 8000
const WS_PORT = 8001
const TEST_TIMEOUT_MS = 120_000

/** A one-connection-at-a-time WebSocket echo (RFC 6455 handshake, unfragmented frames < 126 B). */
const WS_ECHO = `
import socket, hashlib, base64
GUID = b'258EAFA5-E914-47DA-95CA-C5AB0DC85B11'
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(('127.0.0.1', ${WS_PORT}))
server.listen(8)
while True:
    conn, _ = server.accept()
    head = b''
    while b'\\r\\n\\r\\n' not in head:
        head += conn.recv(4096)
    key = [l.split(b':', 1)[1].strip() for l in head.split(b'\\r\\n') if l.lower().startswith(b'sec-websocket-key:')][0]
    accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
    conn.sendall(b'HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: ' + accept + b'\\r\\n\\r\\n')
    frame = b''
    while len(frame) < 2 or len(frame) < 6 + (frame[1] & 127):
        frame += conn.recv(4096)
    length = frame[1] & 127
    mask = frame[2:6]
    payload = bytes(b ^ mask[i % 4] for i, b in enumerate(frame[6:6 + length]))
    conn.sendall(bytes([0x81, length]) + payload)
    conn.close()
`

async function until<T>(attempt: () => Promise<T | undefined>, what: string): Promise<T> {
	for (let tries = 0; tries < 200; tries++) {
		const value = await attempt().catch(() => undefined)
		if (value !== undefined) return value
		await new Promise((resolve) => setTimeout(resolve, 150))
	}
	throw new Error(`${what} never happened`)
}

function tokenHeaders(exposed: SandboxExposedPort): Record<string, string> {
	return { 'x-namzu-token': exposed.token ?? '' }
}

/** Whether anything accepts a connection on the host's loopback port. */
function accepts(port: number): Promise<boolean> {
	return new Promise((resolve) => {
		const socket = connect({ host: '127.0.0.1', port })
		socket.once('connect', () => {
			socket.destroy()
			resolve(true)
		})
		socket.once('error', () => resolve(false))
	})
}

/** One text message through a WebSocket upgrade at `url`; resolves with the echoed text. */
function webSocketEcho(url: string, headers: Record<string, string>, text: string) {
	const key = randomBytes(16).toString('base64')
	const expected = createHash('sha1')
		.update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
		.digest('base64')
	return new Promise<{ accept: string | undefined; echoed: string }>((resolve, reject) => {
		const req = request(url, {
			headers: {
				...headers,
				connection: 'Upgrade',
				upgrade: 'websocket',
				'sec-websocket-key': key,
				'sec-websocket-version': '13',
			},
		})
		req.once('response', (res) => reject(new Error(`no upgrade: ${res.statusCode}`)))
		req.once('error', reject)
		req.once('upgrade', (res, socket: Socket, head: Buffer) => {
			const accept = res.headers['sec-websocket-accept']
			const mask = randomBytes(4)
			const payload = Buffer.from(text)
			const masked = Buffer.from(payload.map((byte, i) => byte ^ (mask[i % 4] ?? 0)))
			socket.write(Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, masked]))
			let frame = head
			socket.on('data', (chunk: Buffer) => {
				frame = Buffer.concat([frame, chunk])
				const length = (frame[1] ?? 0) & 127
				if (frame.length < 2 + length) return
				socket.destroy()
				resolve({
					accept: accept === expected ? accept : undefined,
					echoed: frame.subarray(2, 2 + length).toString(),
				})
			})
			socket.once('error', reject)
		})
		req.end()
	})
}

describe.skipIf(skip !== undefined)(
	`exposePort on the local tier${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		const file = useLocalProvider()
		let sandbox: LocalSandbox
		let exposed: SandboxExposedPort

		beforeAll(async () => {
			sandbox = await file.provider.create()
			await sandbox.writeFile('site/hello.txt', 'hello from the guest\n')
			await sandbox.writeFile('ws_echo.py', WS_ECHO)
			await sandbox.startDetached({
				sessionId: 'http',
				command: 'python3',
				args: ['-m', 'http.server', String(HTTP_PORT), '--bind', '127.0.0.1'],
				cwd: 'site',
			})
			await sandbox.startDetached({ sessionId: 'ws', command: 'python3', args: ['ws_echo.py'] })
			exposed = await sandbox.exposePort(HTTP_PORT)
			await until(async () => {
				const res = await fetch(`${exposed.url}/hello.txt`, { headers: tokenHeaders(exposed) })
				return res.status === 200 ? res : undefined
			}, 'the guest http.server answering')
		}, TEST_TIMEOUT_MS)

		afterAll(async () => {
			await sandbox?.destroy()
		}, TEST_TIMEOUT_MS)

		it(
			'serves the guest http.server to fetch with the token (header, bearer, query then cookie)',
			async () => {
				expect(exposed.url).toBe(`http://127.0.0.1:${exposed.hostPort}`)
				expect(exposed.port).toBe(HTTP_PORT)
				const token = exposed.token ?? ''
				expect(token.length).toBeGreaterThanOrEqual(32)
				const byHeader = await fetch(`${exposed.url}/hello.txt`, { headers: tokenHeaders(exposed) })
				expect(byHeader.status).toBe(200)
				expect(await byHeader.text()).toBe('hello from the guest\n')
				const byBearer = await fetch(`${exposed.url}/hello.txt`, {
					headers: { authorization: `Bearer ${token}` },
				})
				expect(await byBearer.text()).toBe('hello from the guest\n')
				const byQuery = await fetch(`${exposed.url}/hello.txt?token=${token}`)
				expect(byQuery.status).toBe(200)
				const cookie = byQuery.headers.get('set-cookie') ?? ''
				expect(cookie).toContain(`namzu_token_${exposed.hostPort}=${token}`)
				expect(cookie).toContain('HttpOnly')
				const byCookie = await fetch(`${exposed.url}/hello.txt`, {
					headers: { cookie: cookie.split(';')[0] ?? '' },
				})
				expect(await byCookie.text()).toBe('hello from the guest\n')
			},
			TEST_TIMEOUT_MS,
		)

		it(
			'answers 401 to a missing or wrong token and never shows the guest the token',
			async () => {
				const missing = await fetch(`${exposed.url}/hello.txt`)
				expect(missing.status).toBe(401)
				expect(missing.headers.get('www-authenticate')).toBe('Bearer')
				expect(await missing.text()).toContain('x-namzu-token')
				const wrong = await fetch(`${exposed.url}/hello.txt`, {
					headers: { 'x-namzu-token': 'A'.repeat(exposed.token?.length ?? 43) },
				})
				expect(wrong.status).toBe(401)
				const wrongQuery = await fetch(`${exposed.url}/hello.txt?token=nope`)
				expect(wrongQuery.status).toBe(401)
				// http.server logs every request line it served: the query token was taken out first.
				const log = await sandbox.readSession('http')
				expect(log.chunk).toContain('GET /hello.txt')
				expect(log.chunk).not.toContain(exposed.token ?? '')
			},
			TEST_TIMEOUT_MS,
		)

		it(
			'passes a WebSocket upgrade through to a guest echo server',
			async () => {
				const ws = await sandbox.exposePort(WS_PORT)
				try {
					const { accept, echoed } = await until(
						() => webSocketEcho(ws.url, tokenHeaders(ws), 'hello websocket'),
						'the guest WebSocket echo answering',
					)
					expect(accept).toBeDefined()
					expect(echoed).toBe('hello websocket')
					await expect(webSocketEcho(ws.url, {}, 'no token')).rejects.toThrow('no upgrade: 401')
				} finally {
					await ws.close()
				}
			},
			TEST_TIMEOUT_MS,
		)

		it(
			'serves without a token with auth: false',
			async () => {
				const open = await sandbox.exposePort(HTTP_PORT, { auth: false })
				try {
					expect(open.token).toBeUndefined()
					const res = await fetch(`${open.url}/hello.txt`)
					expect(res.status).toBe(200)
					expect(await res.text()).toBe('hello from the guest\n')
				} finally {
					await open.close()
				}
			},
			TEST_TIMEOUT_MS,
		)

		it(
			'answers 502 naming the guest port when nothing listens there',
			async () => {
				const nothing = await sandbox.exposePort(8999, { auth: false })
				try {
					const res = await fetch(`${nothing.url}/`)
					expect(res.status).toBe(502)
					expect(await res.text()).toContain('guest port 8999')
				} finally {
					await nothing.close()
				}
			},
			TEST_TIMEOUT_MS,
		)

		it(
			'answers 503 naming connection-limit to one connection past maxConnections',
			async () => {
				const bounded = await sandbox.exposePort(HTTP_PORT, { maxConnections: 1 })
				const held = connect({ host: '127.0.0.1', port: bounded.hostPort })
				try {
					await new Promise((resolve) => held.once('connect', resolve))
					const refused = await until(async () => {
						const res = await fetch(`${bounded.url}/hello.txt`, { headers: tokenHeaders(bounded) })
						return res.status === 503 ? res : undefined
					}, 'the held connection counting')
					expect(await refused.text()).toContain('connection-limit (1 open)')
					held.destroy()
					const served = await until(async () => {
						const res = await fetch(`${bounded.url}/hello.txt`, { headers: tokenHeaders(bounded) })
						return res.status === 200 ? res : undefined
					}, 'the slot coming back')
					expect(await served.text()).toBe('hello from the guest\n')
				} finally {
					held.destroy()
					await bounded.close()
				}
			},
			TEST_TIMEOUT_MS,
		)

		it(
			'close() releases the listener, and is idempotent',
			async () => {
				const once = await sandbox.exposePort(HTTP_PORT)
				expect(await accepts(once.hostPort)).toBe(true)
				await once.close()
				await once.close()
				await once.closed
				expect(await accepts(once.hostPort)).toBe(false)
			},
			TEST_TIMEOUT_MS,
		)

		it(
			'refuses bad arguments by parameter name before listening',
			async () => {
				await expect(sandbox.exposePort(0)).rejects.toMatchObject({
					name: 'SandboxArgumentError',
					parameter: 'port',
				})
				await expect(sandbox.exposePort(80, { maxConnections: 0 })).rejects.toBeInstanceOf(
					SandboxArgumentError,
				)
				await expect(
					sandbox.exposePort(80, { auth: 'yes' as unknown as boolean }),
				).rejects.toMatchObject({ parameter: 'options.auth' })
			},
			TEST_TIMEOUT_MS,
		)

		it(
			"the sandbox's destroy() closes every exposure and refuses new ones",
			async () => {
				const other = await file.provider.create()
				const first = await other.exposePort(HTTP_PORT)
				const second = await other.exposePort(WS_PORT, { auth: false })
				await other.destroy()
				await first.closed
				await second.closed
				expect(await accepts(first.hostPort)).toBe(false)
				expect(await accepts(second.hostPort)).toBe(false)
				await expect(other.exposePort(HTTP_PORT)).rejects.toBeInstanceOf(SandboxDestroyedError)
			},
			TEST_TIMEOUT_MS,
		)
	},
)
