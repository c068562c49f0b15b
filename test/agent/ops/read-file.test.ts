import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import {
	closeSync,
	existsSync,
	mkdirSync,
	openSync,
	readFileSync,
	symlinkSync,
	writeFileSync,
	writeSync,
} from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { encodeFrame, parseFramePayload } from '../../../src/wire/frame.js'
import { FrameReader } from '../../../src/wire/frame-reader.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { connectAgent, rawRequest } from '../../helpers/raw-agent-client.js'

const CHUNK_BYTES = 64 * 1024
const RANGE_BYTES = 4096

let agent: StartedAgent

beforeAll(async () => {
	agent = await startAgent({
		env: {
			NAMZU_AGENT_READ_FILE_STREAM_CHUNK_BYTES: String(CHUNK_BYTES),
			NAMZU_AGENT_READ_FILE_RANGE_BYTES: String(RANGE_BYTES),
			// procfs is readable through an explicit read root.
			NAMZU_SANDBOX_READ_ROOTS: '/proc',
		},
	})
})
afterAll(() => agent?.stop())

async function request(op: string, body: object): Promise<Record<string, unknown>> {
	const exchange = await rawRequest(agent, { op, body })
	const reply = exchange.frames[0]
	if (!reply) throw new Error(`no reply to ${op}`)
	return reply
}

async function stream(body: object) {
	return rawRequest(agent, { op: 'read-file-stream', body }, { timeoutMs: 20_000 })
}

function reassemble(frames: Record<string, unknown>[]): Buffer {
	return Buffer.concat(
		frames
			.filter((frame) => frame.type === 'data')
			.map((frame) => Buffer.from(String(frame.data), 'base64')),
	)
}

describe('read-file', () => {
	it('round-trips binary content through base64 with the whole size', async () => {
		const bytes = randomBytes(3000)
		writeFileSync(join(agent.workspace, 'bin.dat'), bytes)
		const reply = await request('read-file', { path: 'bin.dat', encoding: 'base64' })
		expect(reply).toMatchObject({ ok: true, encoding: 'base64', sizeBytes: 3000 })
		expect(Buffer.from(String(reply.content), 'base64').equals(bytes)).toBe(true)
	})

	it('reads utf8 by default', async () => {
		writeFileSync(join(agent.workspace, 'text.txt'), 'héllo')
		expect(await request('read-file', { path: 'text.txt' })).toMatchObject({
			ok: true,
			content: 'héllo',
			encoding: 'utf8',
			sizeBytes: 6,
		})
	})

	it('preads one slice and reports the whole file size beside it', async () => {
		const bytes = randomBytes(10_000)
		writeFileSync(join(agent.workspace, 'ranged.dat'), bytes)
		const reply = await request('read-file', {
			path: 'ranged.dat',
			encoding: 'base64',
			offset: 1234,
			length: 100,
		})
		expect(reply).toMatchObject({ ok: true, sizeBytes: 10_000, offset: 1234, bytesRead: 100 })
		expect(Buffer.from(String(reply.content), 'base64').equals(bytes.subarray(1234, 1334))).toBe(
			true,
		)
	})

	it('returns only the bytes that exist when a range runs past end of file', async () => {
		writeFileSync(join(agent.workspace, 'short.txt'), 'abcdef')
		const past = await request('read-file', {
			path: 'short.txt',
			encoding: 'base64',
			offset: 4,
			length: 100,
		})
		expect(past).toMatchObject({ ok: true, sizeBytes: 6, bytesRead: 2 })
		expect(Buffer.from(String(past.content), 'base64').toString()).toBe('ef')
		const beyond = await request('read-file', {
			path: 'short.txt',
			encoding: 'base64',
			offset: 50,
			length: 10,
		})
		expect(beyond).toMatchObject({ ok: true, content: '', bytesRead: 0, sizeBytes: 6 })
	})

	it('refuses a ranged read that does not ask for base64', async () => {
		writeFileSync(join(agent.workspace, 'r.txt'), 'abc')
		expect(await request('read-file', { path: 'r.txt', offset: 0, length: 1 })).toMatchObject({
			ok: false,
			error: 'read_file_range_requires_base64',
		})
	})

	it('refuses a slice above NAMZU_AGENT_READ_FILE_RANGE_BYTES instead of shortening it', async () => {
		writeFileSync(join(agent.workspace, 'big.dat'), randomBytes(RANGE_BYTES * 3))
		const reply = await request('read-file', {
			path: 'big.dat',
			encoding: 'base64',
			offset: 0,
			length: RANGE_BYTES + 1,
		})
		expect(reply.ok).toBe(false)
		expect(reply.error).toBe(
			`read_file_range_too_large: requested ${RANGE_BYTES + 1} bytes, limit ${RANGE_BYTES} (NAMZU_AGENT_READ_FILE_RANGE_BYTES)`,
		)
		expect(reply.content).toBeUndefined()
	})

	it('refuses bad offsets and lengths by name', async () => {
		writeFileSync(join(agent.workspace, 'n.txt'), 'abc')
		const base = { path: 'n.txt', encoding: 'base64' }
		expect(await request('read-file', { ...base, offset: -1, length: 1 })).toMatchObject({
			error: 'read_file_invalid_offset',
		})
		expect(await request('read-file', { ...base, offset: 0, length: 'x' })).toMatchObject({
			error: 'read_file_invalid_length',
		})
	})

	it('answers a missing file with an error carrying ENOENT', async () => {
		const reply = await request('read-file', { path: 'nope.txt' })
		expect(reply.ok).toBe(false)
		expect(String(reply.error)).toContain('ENOENT')
	})

	it('refuses a path that escapes the workspace, also through a symlink', async () => {
		symlinkSync('/etc', join(agent.workspace, 'etc-link'))
		expect(await request('read-file', { path: '../../etc/passwd' })).toMatchObject({
			ok: false,
			error: 'path_escapes_workspace',
			message: 'path escapes the workspace: ../../etc/passwd',
		})
		expect(await request('read-file', { path: 'etc-link/hostname' })).toMatchObject({
			ok: false,
			error: 'path_escapes_workspace',
		})
	})

	it('reads a procfs file that stat reports as zero bytes to EOF, whole and ranged', async () => {
		const path = `/proc/${agent.process.pid}/status`
		const whole = await request('read-file', { path })
		expect(whole.ok).toBe(true)
		expect(String(whole.content)).toContain('Name:')
		expect(whole.sizeBytes).toBe(Buffer.byteLength(String(whole.content)))
		const ranged = await request('read-file', { path, encoding: 'base64', offset: 0, length: 5 })
		expect(ranged).toMatchObject({ ok: true, bytesRead: 5 })
		expect(Buffer.from(String(ranged.content), 'base64').toString()).toBe('Name:')
		expect(Number(ranged.sizeBytes)).toBeGreaterThan(5)
	})
})

describe('read-file-stream', () => {
	it('streams a multi-MiB file in configured chunks that reassemble exactly', async () => {
		const bytes = randomBytes(3 * 1024 * 1024 + 17)
		writeFileSync(join(agent.workspace, 'stream.dat'), bytes)
		const exchange = await stream({ path: 'stream.dat' })
		expect(exchange.terminated).toBe(true)
		expect(exchange.frames[0]).toEqual({
			type: 'meta',
			sizeBytes: bytes.length,
			offset: 0,
			length: bytes.length,
		})
		const data = exchange.frames.filter((frame) => frame.type === 'data')
		expect(data.length).toBe(Math.ceil(bytes.length / CHUNK_BYTES))
		for (const frame of data) {
			expect(Buffer.from(String(frame.data), 'base64').length).toBeLessThanOrEqual(CHUNK_BYTES)
		}
		expect(reassemble(exchange.frames).equals(bytes)).toBe(true)
		expect(exchange.frames.at(-1)).toEqual({ type: 'end', bytesSent: bytes.length })
	})

	it('streams a range, and a range past end of file covers what exists', async () => {
		const bytes = randomBytes(200_000)
		writeFileSync(join(agent.workspace, 'range-stream.dat'), bytes)
		const exchange = await stream({ path: 'range-stream.dat', offset: 150_000, length: 100_000 })
		expect(exchange.frames[0]).toMatchObject({ type: 'meta', offset: 150_000, length: 50_000 })
		expect(reassemble(exchange.frames).equals(bytes.subarray(150_000))).toBe(true)
		expect(exchange.frames.at(-1)).toEqual({ type: 'end', bytesSent: 50_000 })
	})

	it('refuses a directory and a fifo as not regular files, without blocking on the fifo', async () => {
		mkdirSync(join(agent.workspace, 'a-dir'))
		execFileSync('mkfifo', [join(agent.workspace, 'a-fifo')])
		for (const path of ['a-dir', 'a-fifo']) {
			const exchange = await stream({ path })
			expect(exchange.frames).toEqual([
				{ type: 'error', error: 'read_file_stream_not_a_regular_file' },
			])
			expect(exchange.terminated).toBe(true)
		}
	})

	it('streams a procfs file that stat reports as zero bytes to EOF', async () => {
		const exchange = await stream({ path: `/proc/${agent.process.pid}/status` })
		const meta = exchange.frames[0]
		expect(meta?.type).toBe('meta')
		expect(Number(meta?.sizeBytes)).toBeGreaterThan(0)
		const text = reassemble(exchange.frames).toString()
		expect(text).toContain('Name:')
		expect(Buffer.byteLength(text)).toBe(meta?.sizeBytes)
		expect(exchange.frames.at(-1)).toEqual({ type: 'end', bytesSent: meta?.sizeBytes })
	})

	it('refuses a path that escapes the workspace in the stream shape', async () => {
		const exchange = await stream({ path: '/etc/passwd' })
		expect(exchange.frames).toEqual([{ type: 'error', error: 'path_escapes_workspace' }])
	})

	it('fails with a short-read error, never a short success, when the file shrinks mid-stream', async () => {
		const path = join(agent.workspace, 'shrinking.dat')
		writeFileSync(path, randomBytes(8 * 1024 * 1024))
		// Read slowly: pause the client socket so the agent blocks on drain after a few chunks.
		const exchange = await rawRequest(
			agent,
			{ op: 'read-file-stream', body: { path: 'shrinking.dat' } },
			{
				timeoutMs: 20_000,
				afterConnect: (socket) => {
					socket.pause()
					setTimeout(() => {
						writeFileSync(path, 'tiny')
						socket.resume()
					}, 300)
				},
			},
		)
		const last = exchange.frames.at(-1)
		expect(last?.type).toBe('error')
		expect(String(last?.error)).toMatch(/^read_file_stream_short_read/)
		expect(exchange.frames.some((frame) => frame.type === 'end')).toBe(false)
		expect(exchange.terminated).toBe(true)
	})

	it('stops reading and closes the file when the peer goes away mid-stream', async () => {
		const path = join(agent.workspace, 'abandoned.dat')
		writeFileSync(path, randomBytes(8 * 1024 * 1024))
		await rawRequest(
			agent,
			{ op: 'read-file-stream', body: { path: 'abandoned.dat' } },
			{ timeoutMs: 300, afterConnect: (socket) => socket.pause() },
		)
		// The agent must let go of the descriptor: poll its fd table for the file.
		const pid = agent.process.pid
		let open = true
		for (let attempt = 0; attempt < 100 && open; attempt++) {
			await new Promise((resolve) => setTimeout(resolve, 20))
			open = execFileSync('ls', ['-l', `/proc/${pid}/fd`])
				.toString()
				.includes('abandoned.dat')
		}
		expect(open).toBe(false)
		expect(existsSync(path)).toBe(true)
	})
})

describe('read-file-stream memory', () => {
	function peakResidentBytes(pid: number): number {
		const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
		return Number(match?.[1] ?? Number.NaN) * 1024
	}

	/** Streams `path`, keeping only a running count (the test process must stay small too). */
	function drain(
		path: string,
	): Promise<{ bytes: number; last: Record<string, unknown> | undefined }> {
		return new Promise((resolve, reject) => {
			const socket = connectAgent(agent)
			const reader = new FrameReader({ maxFrameBytes: 64 * 1024 * 1024, limitVariable: 'test' })
			let bytes = 0
			let last: Record<string, unknown> | undefined
			socket.write(encodeFrame({ op: 'read-file-stream', body: { path } }))
			socket.on('data', (chunk: Buffer) => {
				for (const item of reader.push(chunk)) {
					if (item.kind === 'end') continue
					last = parseFramePayload(item.payload)
					if (last.type === 'data') bytes += Buffer.from(String(last.data), 'base64').length
				}
			})
			socket.on('error', reject)
			socket.on('close', () => resolve({ bytes, last }))
		})
	}

	it('streams a file far larger than the agent grows, holding about one chunk at a time', async () => {
		const size = 128 * 1024 * 1024
		const fd = openSync(join(agent.workspace, 'huge.dat'), 'w')
		const block = randomBytes(1024 * 1024)
		for (let written = 0; written < size; written += block.length) writeSync(fd, block)
		closeSync(fd)
		const pid = agent.process.pid ?? 0
		const before = peakResidentBytes(pid)
		const { bytes, last } = await drain('huge.dat')
		expect(bytes).toBe(size)
		expect(last).toEqual({ type: 'end', bytesSent: size })
		// Buffering the file would raise the peak by at least its size.
		expect(peakResidentBytes(pid) - before).toBeLessThan(64 * 1024 * 1024)
	})
})
