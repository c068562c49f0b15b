import { mkdtemp, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { AgentDialFailedError } from '../../../src/host/transport/transport-errors.js'
import { splitAckLine } from '../../../src/host/transport/vsock-handshake.js'
import { encodeFrame } from '../../../src/wire/frame.js'

let dir: string
let server: Server | undefined

beforeEach(async () => {
	dir = await mkdtemp(join(tmpdir(), 'namzu-vsock-'))
})

afterEach(async () => {
	const current = server
	server = undefined
	if (current) await new Promise((resolve) => current.close(resolve))
	await rm(dir, { recursive: true, force: true })
})

/** A Firecracker-style hybrid socket: reads `CONNECT <port>\n`, then answers `answer(port)`. */
async function hybridSocket(
	answer: (port: string) => Buffer | string,
): Promise<{ path: string; ports: string[] }> {
	const path = join(dir, 'v.sock')
	const ports: string[] = []
	server = createServer((socket) => {
		let buffered = ''
		socket.on('error', () => {})
		socket.on('data', function onData(chunk: Buffer) {
			buffered += chunk.toString('latin1')
			const match = /^CONNECT (\d+)\n/.exec(buffered)
			if (!match?.[1]) return
			socket.off('data', onData)
			ports.push(match[1])
			const answerBytes = answer(match[1])
			socket.end(answerBytes)
		})
	})
	await new Promise<void>((resolve) => server?.listen(path, resolve))
	return { path, ports }
}

describe('vsock CONNECT handshake', () => {
	it.each([
		['OK 1073741824\n', { line: 'OK 1073741824', rest: '' }],
		['OK 5\r\nabc', { line: 'OK 5', rest: 'abc' }],
		['FAILURE\n', { line: 'FAILURE', rest: '' }],
	])('splits the acknowledgement line %j from what follows it', (input, expected) => {
		const split = splitAckLine(Buffer.from(input, 'latin1'))
		expect(split?.line).toBe(expected.line)
		expect(split?.rest.toString('latin1')).toBe(expected.rest)
	})

	it('waits for a newline before reading the acknowledgement', () => {
		expect(splitAckLine(Buffer.from('OK 12'))).toBeUndefined()
	})

	it('sends CONNECT <port> and replays agent bytes that arrived with the OK line', async () => {
		const reply = encodeFrame({ ok: true, protocolVersion: 2, features: ['write-file-parts'] })
		const { path, ports } = await hybridSocket(() =>
			Buffer.concat([Buffer.from('OK 1073741824\n'), reply]),
		)
		const transport = new AgentTransport({ kind: 'vsock', udsPath: path, port: 1234 })
		const health = await transport.healthz()
		expect(health.features).toEqual(['write-file-parts'])
		expect(ports).toEqual(['1234'])
	})

	it('treats a refused CONNECT as a failed dial attempt and retries within the budget', async () => {
		const { path, ports } = await hybridSocket(() => 'FAILURE connection refused\n')
		const transport = new AgentTransport(
			{ kind: 'vsock', udsPath: path, port: 52 },
			{ connectRetryBudgetMs: 300, connectRetryIntervalMs: 50 },
		)
		const error = await transport.healthz().catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(AgentDialFailedError)
		expect((error as AgentDialFailedError).cause).toMatchObject({ name: 'VsockHandshakeError' })
		expect(ports.length).toBeGreaterThan(1)
	})
})
