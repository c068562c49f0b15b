/**
 * Routing of file calls, pinned against a recording peer: which requests go out, in what order,
 * on how many connections. Real guest behaviour is covered in agent-transport-real-agent.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { SandboxFileError } from '../../../src/contract/errors.js'
import {
	readFileStreamThroughAgent,
	readFileThroughAgent,
} from '../../../src/host/files/agent-file-read.js'
import { writeFileThroughAgent } from '../../../src/host/files/agent-file-write.js'
import { AgentReadFileStreamUnsupportedError } from '../../../src/host/refusals/guest-feature-errors.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import type { AgentTransportOptions } from '../../../src/host/transport/agent-transport-options.js'
import {
	AgentPreauthFrameTooLargeError,
	AgentWriteFileTooLargeError,
} from '../../../src/host/transport/transport-errors.js'
import { READ_FILE_STREAM_FEATURE, WRITE_FILE_PARTS_FEATURE } from '../../../src/wire/features.js'
import { encodeFrame } from '../../../src/wire/frame.js'
import {
	type FakeAgent,
	healthzReply,
	type RecordedRequest,
	reply,
	startFakeAgent,
	streamReply,
} from '../fake-agent-server.js'

const MiB = 1024 * 1024
const fakes: FakeAgent[] = []
afterEach(async () => {
	for (const fake of fakes.splice(0)) await fake.close()
})

interface Peer {
	fake: FakeAgent
	transport: AgentTransport
	dials: number[]
	written: Buffer[]
	/** Most write-file requests received and not yet answered at one moment. */
	maxOutstanding: () => number
}

/** A recording guest: healthz with `features`, write-file appends, read-file(-stream) serves `file`. */
async function peer(
	mode: 'unix' | 'tcp',
	features: readonly string[],
	options: AgentTransportOptions & { failPartAt?: number; file?: Buffer } = {},
): Promise<Peer> {
	const written: Buffer[] = []
	let outstanding = 0
	let maxOutstanding = 0
	const file = options.file ?? Buffer.from('hello file')
	const fake = await startFakeAgent((request: RecordedRequest, socket) => {
		const body = request.body
		if (request.op === 'healthz') return reply(socket, healthzReply(features))
		if (request.op === 'write-file') {
			const part = body.part as { offset?: number; discard?: boolean; final?: boolean } | undefined
			if (part?.discard) return reply(socket, { ok: true, bytesWritten: 0, discarded: true })
			if (part && part.offset === options.failPartAt) {
				return reply(socket, { ok: false, error: 'write_part_offset_mismatch: expected 0' })
			}
			const content = Buffer.from(String(body.content), 'base64')
			written.push(content)
			const total = written.reduce((sum, chunk) => sum + chunk.length, 0)
			outstanding++
			maxOutstanding = Math.max(maxOutstanding, outstanding)
			// Answer late: a client that did not wait for this answer would overlap the next part.
			setTimeout(() => {
				outstanding--
				reply(socket, {
					ok: true,
					bytesWritten: content.length,
					...(part?.final ? { sizeBytes: total } : {}),
				})
			}, 20)
			return
		}
		if (request.op === 'read-file') {
			// A ranged read answers its slice: the host refuses a reply longer than it asked for.
			const offset = typeof body.offset === 'number' ? body.offset : 0
			const end = typeof body.length === 'number' ? offset + body.length : file.length
			return reply(socket, {
				ok: true,
				content: file.subarray(offset, end).toString('base64'),
				sizeBytes: file.length,
				encoding: 'base64',
			})
		}
		if (request.op === 'read-file-stream') {
			return streamReply(socket, [
				{ type: 'meta', sizeBytes: file.length, offset: 0, length: file.length },
				{ type: 'data', data: file.subarray(0, 4).toString('base64') },
				{ type: 'data', data: file.subarray(4).toString('base64') },
				{ type: 'end', bytesSent: file.length },
			])
		}
		reply(socket, { ok: false, error: `unknown_op: ${request.op}` })
	}, mode)
	fakes.push(fake)
	const dials: number[] = []
	const handle =
		mode === 'unix'
			? { kind: 'unix' as const, path: fake.path ?? '' }
			: { kind: 'tcp' as const, host: '127.0.0.1', port: fake.port ?? 0, token: 'tok' }
	const transport = new AgentTransport(handle, {
		connectRetryBudgetMs: 0,
		...options,
		onDial: (event) => dials.push(event.attempts),
	})
	return { fake, transport, dials, written, maxOutstanding: () => maxOutstanding }
}

function body(size: number): Buffer {
	const buffer = Buffer.alloc(size)
	for (let i = 0; i < size; i++) buffer[i] = (i * 31 + 7) & 0xff
	return buffer
}

describe('writeFile routing', () => {
	it('sends a body that fits one frame as the single write-file request, byte for byte', async () => {
		const { fake, transport } = await peer('tcp', [WRITE_FILE_PARTS_FEATURE])
		const data = body(1000)
		await writeFileThroughAgent(transport, '/w/a.bin', data)
		expect(fake.requests.map((request) => request.op)).toEqual(['write-file'])
		const expected = encodeFrame({
			op: 'write-file',
			token: 'tok',
			body: { path: '/w/a.bin', encoding: 'base64', content: data.toString('base64') },
		})
		expect(fake.requests[0]?.raw.equals(expected)).toBe(true)
	})

	it('refuses a body above maxWriteFileBytes before any connection, even one that fits a single frame', async () => {
		const { fake, transport, dials } = await peer('unix', [WRITE_FILE_PARTS_FEATURE], {
			maxWriteFileBytes: 100,
		})
		const error = await writeFileThroughAgent(transport, '/w/a', body(101)).catch(
			(caught: unknown) => caught,
		)
		expect(error).toBeInstanceOf(AgentWriteFileTooLargeError)
		expect(error).toMatchObject({ sizeBytes: 101, limitBytes: 100 })
		expect((error as Error).message).toContain('100 bytes')
		expect(dials).toEqual([])
		expect(fake.connections).toBe(0)
	})

	it('defaults maxWriteFileBytes to 1 GiB', async () => {
		const { transport } = await peer('unix', [])
		expect(transport.options.maxWriteFileBytes).toBe(1024 * MiB)
	})

	it('refuses an oversized tcp body to a guest without write-file-parts, naming what the guest lacks', async () => {
		const { fake, transport } = await peer('tcp', [READ_FILE_STREAM_FEATURE])
		const error = await writeFileThroughAgent(transport, '/w/big', body(7 * MiB)).catch(
			(caught: unknown) => caught,
		)
		expect(error).toBeInstanceOf(AgentPreauthFrameTooLargeError)
		expect((error as Error).message).toMatch(/guest does not advertise 'write-file-parts'/)
		expect(fake.requests.map((request) => request.op)).toEqual(['healthz'])
	})

	it('sends parts sequentially, one connection each, to a temp sibling renamed on the last part', async () => {
		const data = body(7 * MiB + 5)
		const { fake, transport, written, maxOutstanding } = await peer(
			'tcp',
			[WRITE_FILE_PARTS_FEATURE],
			{ writeFilePartBytes: 3 * MiB },
		)
		await writeFileThroughAgent(transport, '/w/big.bin', data)
		const parts = fake.requests.filter((request) => request.op === 'write-file')
		expect(parts).toHaveLength(3)
		const temp = parts[0]?.body.path
		expect(temp).toMatch(/^\/w\/\.namzu-write-big\.bin\.[0-9a-f-]{36}\.part$/)
		expect(parts.map((request) => request.body.path)).toEqual([temp, temp, temp])
		expect(parts.map((request) => request.body.part)).toEqual([
			{ offset: 0 },
			{ offset: 3 * MiB },
			{ offset: 6 * MiB, final: true, renameTo: '/w/big.bin' },
		])
		expect(parts.every((request) => request.raw.length - 9 <= 8 * MiB)).toBe(true)
		expect(fake.connections).toBe(1 + 3)
		expect(maxOutstanding()).toBe(1)
		expect(Buffer.concat(written).equals(data)).toBe(true)
	})

	it('defaults the part size to the most one frame admits', async () => {
		const data = body(17 * MiB)
		const { fake, transport } = await peer('tcp', [WRITE_FILE_PARTS_FEATURE])
		await writeFileThroughAgent(transport, '/w/big.bin', data)
		const frames = fake.requests.filter((request) => request.op === 'write-file')
		expect(frames).toHaveLength(3)
		const first = (frames[0]?.raw.length ?? 0) - 9
		expect(first).toBeLessThanOrEqual(8 * MiB)
		expect(first).toBeGreaterThan(8 * MiB - 200)
	})

	it('discards the temp file and rethrows the original error when a part fails', async () => {
		const { fake, transport } = await peer('tcp', [WRITE_FILE_PARTS_FEATURE], {
			writeFilePartBytes: 3 * MiB,
			failPartAt: 3 * MiB,
		})
		const error = await writeFileThroughAgent(transport, '/w/big.bin', body(7 * MiB)).catch(
			(caught: unknown) => caught,
		)
		expect(error).toBeInstanceOf(SandboxFileError)
		expect((error as SandboxFileError).code).toBe('write_part_offset_mismatch')
		const writes = fake.requests.filter((request) => request.op === 'write-file')
		const last = writes.at(-1)
		expect(last?.body.part).toEqual({ discard: true })
		expect(last?.body.path).toBe(writes[0]?.body.path)
		expect(writes.some((request) => (request.body.part as { final?: boolean }).final)).toBe(false)
	})

	it('discards the temp file and rejects with the abort reason when aborted mid-sequence', async () => {
		const controller = new AbortController()
		const reason = new Error('stop writing')
		let parts = 0
		const { fake, transport } = await peer('tcp', [WRITE_FILE_PARTS_FEATURE], {
			writeFilePartBytes: 3 * MiB,
		})
		// Abort as soon as the first part has reached the guest.
		const watcher = setInterval(() => {
			parts = fake.requests.filter((request) => request.op === 'write-file').length
			if (parts >= 1) {
				controller.abort(reason)
				clearInterval(watcher)
			}
		}, 1)
		const error = await writeFileThroughAgent(
			transport,
			'/w/big.bin',
			body(7 * MiB),
			controller.signal,
		).catch((caught: unknown) => caught)
		clearInterval(watcher)
		expect(error).toBe(reason)
		const writes = fake.requests.filter((request) => request.op === 'write-file')
		expect(writes.at(-1)?.body.part).toEqual({ discard: true })
		expect(writes.some((request) => (request.body.part as { final?: boolean }).final)).toBe(false)
	})
})

describe('readFile routing', () => {
	it('uses the single-frame read-file path against a guest without read-file-stream', async () => {
		const { fake, transport } = await peer('unix', [WRITE_FILE_PARTS_FEATURE])
		const content = await readFileThroughAgent(transport, '/w/a.txt')
		expect(content.toString()).toBe('hello file')
		expect(fake.requests.map((request) => [request.op, request.body])).toEqual([
			['healthz', {}],
			['read-file', { path: '/w/a.txt', encoding: 'base64' }],
		])
	})

	it('serves a whole-file read through the stream against a guest that advertises it', async () => {
		const { fake, transport } = await peer('unix', [READ_FILE_STREAM_FEATURE])
		const content = await readFileThroughAgent(transport, '/w/a.txt')
		expect(content.toString()).toBe('hello file')
		expect(fake.requests.map((request) => request.op)).toEqual(['healthz', 'read-file-stream'])
	})

	it('refuses a ranged read or a stream before dialing when the guest lacks read-file-stream', async () => {
		const { fake, transport } = await peer('unix', [])
		await expect(
			readFileThroughAgent(transport, '/w/a', { offset: 1, length: 2 }),
		).rejects.toBeInstanceOf(AgentReadFileStreamUnsupportedError)
		const consume = async () => {
			for await (const _chunk of readFileStreamThroughAgent(transport, '/w/a')) {
				// drain
			}
		}
		await expect(consume()).rejects.toBeInstanceOf(AgentReadFileStreamUnsupportedError)
		expect(fake.requests.map((request) => request.op)).toEqual(['healthz'])
	})

	it('sends a ranged read as base64 read-file with the offset and length', async () => {
		const { fake, transport } = await peer('unix', [READ_FILE_STREAM_FEATURE])
		await readFileThroughAgent(transport, '/w/a', { offset: 3, length: 4 })
		expect(fake.requests.at(-1)?.body).toEqual({
			path: '/w/a',
			encoding: 'base64',
			offset: 3,
			length: 4,
		})
	})
})
