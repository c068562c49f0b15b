/**
 * The agent's side of binary data frames against a hostile host, on the real agent: a binary frame
 * on a connection that did not negotiate it, before authentication, or above the frame limit is a
 * named refusal, refused at its header (the payload is never waited for), and the connection is
 * destroyed; a streamed write that lies about its size leaves no file. Positive controls: the same
 * frames on a negotiated connection are served.
 */
import { readdir } from 'node:fs/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { encodeBinaryFrame, encodeBinaryFrameHeader } from '../../../src/wire/binary-frame.js'
import { encodeFrame } from '../../../src/wire/frame.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { openConnection, rawRequest, writesAreRejected } from '../agent-test-kit.js'

const TOKEN = 'binary-hostile-token-0123456789'

async function leftovers(agent: StartedAgent): Promise<string[]> {
	return (await readdir(agent.workspace)).filter((name) => name !== 'warm.txt')
}

/** What is left once the agent finished tearing the refused write down (it runs on close). */
async function settledLeftovers(agent: StartedAgent): Promise<string[]> {
	const deadline = Date.now() + 5000
	for (;;) {
		const names = await leftovers(agent)
		if (names.length === 0 || Date.now() > deadline) return names
		await new Promise((resolve) => setTimeout(resolve, 20))
	}
}

describe('binary frames from a hostile host (unix, no token mode)', () => {
	let agent: StartedAgent
	beforeAll(async () => {
		agent = await startAgent({ env: { NAMZU_AGENT_MAX_FRAME_BYTES: String(1024 * 1024) } })
	})
	afterAll(async () => {
		await agent.stop()
	})

	it('refuses a binary frame on a connection whose request did not ask, and closes it', async () => {
		const envelope = { op: 'execute', body: { command: 'sleep', args: ['30'] } }
		const connection = openConnection(
			agent,
			Buffer.concat([encodeFrame(envelope), encodeBinaryFrame('data', Buffer.from('hi'))]),
			{ allowHalfOpen: true },
		)
		const refusal = await connection.waitFor((frame) => frame.ok === false)
		expect(String(refusal.error)).toMatch(/^binary_frame_not_negotiated: /)
		expect(await writesAreRejected(connection)).toBe(true)
	})

	it('refuses binary frames on an op that does not serve them, even when the request asks', async () => {
		const envelope = { op: 'list-files', body: { path: '.', binaryFrames: true } }
		const connection = openConnection(
			agent,
			Buffer.concat([encodeFrame(envelope), encodeBinaryFrameHeader('data', 512 * 1024)]),
			{ allowHalfOpen: true },
		)
		const refusal = await connection.waitFor(
			(frame) => typeof frame.error === 'string' && frame.error.startsWith('binary_frame'),
		)
		expect(String(refusal.error)).toMatch(/^binary_frame_not_negotiated/)
	})

	it('refuses a negotiated binary frame above NAMZU_AGENT_MAX_FRAME_BYTES at its header; no file is left', async () => {
		const envelope = {
			op: 'write-file',
			body: { path: 'huge.bin', sizeBytes: 4 * 1024 * 1024, binaryFrames: true },
		}
		// Only the header of the 2 MiB frame is sent: the refusal must not wait for its payload.
		const connection = openConnection(
			agent,
			Buffer.concat([encodeFrame(envelope), encodeBinaryFrameHeader('data', 2 * 1024 * 1024)]),
			{ allowHalfOpen: true },
		)
		const refusal = await connection.waitFor((frame) => frame.ok === false)
		expect(refusal.error).toBe(
			`frame_too_large: announced ${2 * 1024 * 1024} bytes, limit ${1024 * 1024} (NAMZU_AGENT_MAX_FRAME_BYTES)`,
		)
		expect(await writesAreRejected(connection)).toBe(true)
		expect(await settledLeftovers(agent)).toEqual([])
	})

	it('refuses a streamed write that sends more than its sizeBytes; nothing is written', async () => {
		const envelope = {
			op: 'write-file',
			body: { path: 'lying.bin', sizeBytes: 4, binaryFrames: true },
		}
		const exchange = await rawRequest(
			agent,
			Buffer.concat([
				encodeFrame(envelope),
				encodeBinaryFrame('data', Buffer.from('12345678')),
				encodeFrame({ type: 'end' }),
			]),
		)
		expect(String(exchange.frames[0]?.error)).toMatch(/^write_stream_size_mismatch: /)
		expect(await leftovers(agent)).toEqual([])
	})

	it('refuses a streamed write that ends short of its sizeBytes; nothing is written', async () => {
		const envelope = {
			op: 'write-file',
			body: { path: 'short.bin', sizeBytes: 10, binaryFrames: true },
		}
		const exchange = await rawRequest(
			agent,
			Buffer.concat([
				encodeFrame(envelope),
				encodeBinaryFrame('data', Buffer.from('1234')),
				encodeFrame({ type: 'end' }),
			]),
		)
		expect(String(exchange.frames[0]?.error)).toMatch(/^write_stream_size_mismatch: /)
		expect(await leftovers(agent)).toEqual([])
	})

	it('positive control: a negotiated streamed write of binary frames is written and answered', async () => {
		const envelope = {
			op: 'write-file',
			body: { path: 'ok.bin', sizeBytes: 6, binaryFrames: true },
		}
		const exchange = await rawRequest(
			agent,
			Buffer.concat([
				encodeFrame(envelope),
				encodeBinaryFrame('data', Buffer.from('abc')),
				encodeBinaryFrame('data', Buffer.from('def')),
				encodeFrame({ type: 'end' }),
			]),
		)
		expect(exchange.frames[0]).toMatchObject({ ok: true, bytesWritten: 6 })
		expect(await leftovers(agent)).toEqual(['ok.bin'])
	})
})

describe('binary frames before authentication (tcp, bind token)', () => {
	let agent: StartedAgent
	beforeAll(async () => {
		agent = await startAgent({ mode: 'tcp', env: { NAMZU_AGENT_BIND_TOKEN: TOKEN } })
	})
	afterAll(async () => {
		await agent.stop()
	})

	it('refuses a binary first frame at its header, without waiting for the payload, and closes', async () => {
		const connection = openConnection(agent, encodeBinaryFrameHeader('data', 4 * 1024 * 1024), {
			allowHalfOpen: true,
		})
		const refusal = await connection.waitFor((frame) => frame.ok === false)
		expect(String(refusal.error)).toMatch(/^binary_frame_not_negotiated: /)
		expect(await writesAreRejected(connection)).toBe(true)
	})

	it('positive control: an authenticated streamed write over tcp is served', async () => {
		const envelope = {
			op: 'write-file',
			token: TOKEN,
			body: { path: 'tcp-ok.bin', sizeBytes: 3, binaryFrames: true },
		}
		const exchange = await rawRequest(
			agent,
			Buffer.concat([
				encodeFrame(envelope),
				encodeBinaryFrame('data', Buffer.from('xyz')),
				encodeFrame({ type: 'end' }),
			]),
		)
		expect(exchange.frames[0]).toMatchObject({ ok: true, bytesWritten: 3 })
	})
})
