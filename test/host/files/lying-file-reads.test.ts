/**
 * File reads are held to what the host asked for, never to the guest's word (a lying peer on a
 * real socket, the real frame codec): a ranged read to the requested length (its frame to the
 * range's size), a stream to the length it announced and that to the requested one, a whole read
 * to `maxReadFileBytes`. A guest that lies gets a named protocol error, never a Buffer of its
 * choosing; positive controls show honest replies of the same shapes arrive whole.
 */
import { afterEach, describe, expect, it } from 'vitest'
import {
	readFileStreamThroughAgent,
	readFileThroughAgent,
} from '../../../src/host/files/agent-file-read.js'
import {
	RemoteByteCountError,
	RemoteProtocolError,
} from '../../../src/host/refusals/refusal-errors.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import type { AgentTransportOptions } from '../../../src/host/transport/agent-transport-options.js'
import { AgentReadFileTooLargeError } from '../../../src/host/transport/transport-errors.js'
import { READ_FILE_STREAM_FEATURE } from '../../../src/wire/features.js'
import {
	type FakeAgent,
	healthzReply,
	reply,
	startFakeAgent,
	streamReply,
} from '../fake-agent-server.js'

const fakes: FakeAgent[] = []
afterEach(async () => {
	for (const fake of fakes.splice(0)) await fake.close()
})

const FILE = Buffer.from('0123456789abcdefghij')

type Answer = (body: Record<string, unknown>) => object | object[]

/** A guest that answers `read-file` (object) or `read-file-stream` (events) as scripted. */
async function guest(
	answers: { readFile?: Answer; readFileStream?: Answer },
	features: readonly string[] = [READ_FILE_STREAM_FEATURE],
	options: AgentTransportOptions = {},
): Promise<AgentTransport> {
	const fake = await startFakeAgent((request, socket) => {
		if (request.op === 'healthz') return reply(socket, healthzReply(features))
		if (request.op === 'read-file' && answers.readFile) {
			return reply(socket, answers.readFile(request.body))
		}
		if (request.op === 'read-file-stream' && answers.readFileStream) {
			return streamReply(socket, answers.readFileStream(request.body) as object[])
		}
		reply(socket, { ok: false, error: `unknown_op: ${request.op}` })
	})
	fakes.push(fake)
	return new AgentTransport(
		{ kind: 'unix', path: fake.path ?? '' },
		{
			connectRetryBudgetMs: 0,
			...options,
		},
	)
}

const base64 = (bytes: Buffer) => bytes.toString('base64')

async function collect(chunks: AsyncIterable<Buffer>): Promise<Buffer> {
	const parts: Buffer[] = []
	for await (const chunk of chunks) parts.push(chunk)
	return Buffer.concat(parts)
}

describe('ranged reads', () => {
	it('refuses a slice longer than the requested length, naming both counts', async () => {
		const transport = await guest({
			readFile: () => ({
				ok: true,
				content: base64(FILE),
				sizeBytes: FILE.length,
				encoding: 'base64',
			}),
		})
		const error = await readFileThroughAgent(transport, '/w/a', { offset: 0, length: 4 }).catch(
			(caught: unknown) => caught,
		)
		expect(error).toBeInstanceOf(RemoteByteCountError)
		expect(error).toMatchObject({ op: 'read-file', expectedBytes: 4, receivedBytes: FILE.length })
	})

	it('refuses at its header a reply frame far larger than the range could need', async () => {
		const huge = Buffer.alloc(2 * 1024 * 1024, 0x61)
		const transport = await guest({
			readFile: () => ({
				ok: true,
				content: base64(huge),
				sizeBytes: huge.length,
				encoding: 'base64',
			}),
		})
		const error = await readFileThroughAgent(transport, '/w/a', { offset: 0, length: 4 }).catch(
			(caught: unknown) => caught,
		)
		expect(error).toBeInstanceOf(RemoteProtocolError)
		expect((error as Error).message).toMatch(/frame_too_large/)
	})

	it('refuses a bytesRead that contradicts the content, and content past the file it announced', async () => {
		const lies = [
			{
				ok: true,
				content: base64(FILE.subarray(0, 4)),
				sizeBytes: 20,
				encoding: 'base64',
				bytesRead: 3,
			},
			{ ok: true, content: base64(FILE.subarray(0, 4)), sizeBytes: 12, encoding: 'base64' },
		]
		let next = 0
		const transport = await guest({ readFile: () => lies[next++] ?? {} })
		await expect(
			readFileThroughAgent(transport, '/w/a', { offset: 0, length: 4 }),
		).rejects.toMatchObject({ name: 'RemoteByteCountError', expectedBytes: 3, receivedBytes: 4 })
		await expect(
			readFileThroughAgent(transport, '/w/a', { offset: 10, length: 4 }),
		).rejects.toMatchObject({ name: 'RemoteByteCountError', expectedBytes: 2, receivedBytes: 4 })
	})

	it('positive control: an honest slice arrives', async () => {
		const transport = await guest({
			readFile: (body) => {
				const offset = Number(body.offset)
				const slice = FILE.subarray(offset, offset + Number(body.length))
				return {
					ok: true,
					content: base64(slice),
					sizeBytes: FILE.length,
					encoding: 'base64',
					bytesRead: slice.length,
				}
			},
		})
		const slice = await readFileThroughAgent(transport, '/w/a', { offset: 3, length: 4 })
		expect(slice.toString()).toBe('3456')
	})
})

describe('streamed reads', () => {
	const meta = (length: number) => ({ type: 'meta', sizeBytes: length, offset: 0, length })

	it('refuses data past the length the stream announced, gathering or streaming', async () => {
		const transport = await guest({
			readFileStream: () => [
				meta(4),
				{ type: 'data', data: base64(FILE) },
				{ type: 'end', bytesSent: 20 },
			],
		})
		await expect(readFileThroughAgent(transport, '/w/a')).rejects.toMatchObject({
			name: 'RemoteByteCountError',
			op: 'read-file-stream',
			expectedBytes: 4,
			receivedBytes: FILE.length,
		})
		await expect(collect(readFileStreamThroughAgent(transport, '/w/a'))).rejects.toBeInstanceOf(
			RemoteByteCountError,
		)
	})

	it('refuses an announced length above the requested one', async () => {
		const transport = await guest({
			readFileStream: () => [meta(20), { type: 'end', bytesSent: 0 }],
		})
		await expect(
			collect(readFileStreamThroughAgent(transport, '/w/a', { offset: 0, length: 4 })),
		).rejects.toMatchObject({ name: 'RemoteByteCountError', expectedBytes: 4, receivedBytes: 20 })
	})

	it('refuses a whole read the guest says is larger than maxReadFileBytes, before gathering a byte', async () => {
		const claimed = 5 * 1024 * 1024 * 1024
		const transport = await guest({
			readFileStream: () => [meta(claimed), { type: 'data', data: base64(FILE) }],
		})
		const error = await readFileThroughAgent(transport, '/w/a').catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(AgentReadFileTooLargeError)
		expect(error).toMatchObject({ sizeBytes: claimed, limitBytes: 1024 * 1024 * 1024 })
	})

	it('holds an honest file to a lower maxReadFileBytes too, while readFileStream still reads it', async () => {
		const events = () => [
			meta(FILE.length),
			{ type: 'data', data: base64(FILE) },
			{ type: 'end', bytesSent: 20 },
		]
		const transport = await guest({ readFileStream: events }, [READ_FILE_STREAM_FEATURE], {
			maxReadFileBytes: 10,
		})
		await expect(readFileThroughAgent(transport, '/w/a')).rejects.toBeInstanceOf(
			AgentReadFileTooLargeError,
		)
		expect((await collect(readFileStreamThroughAgent(transport, '/w/a'))).equals(FILE)).toBe(true)
	})

	it('refuses data before the meta that sizes it', async () => {
		const transport = await guest({
			readFileStream: () => [
				{ type: 'data', data: base64(FILE) },
				{ type: 'end', bytesSent: 20 },
			],
		})
		await expect(readFileThroughAgent(transport, '/w/a')).rejects.toThrow(/data before meta/)
	})

	it('positive control: an honest stream is gathered whole', async () => {
		const transport = await guest({
			readFileStream: () => [
				meta(FILE.length),
				{ type: 'data', data: base64(FILE.subarray(0, 7)) },
				{ type: 'data', data: base64(FILE.subarray(7)) },
				{ type: 'end', bytesSent: FILE.length },
			],
		})
		expect((await readFileThroughAgent(transport, '/w/a')).equals(FILE)).toBe(true)
	})
})

describe('whole reads from a guest without streams', () => {
	it('refuses content past the size the reply announced', async () => {
		const transport = await guest(
			{ readFile: () => ({ ok: true, content: base64(FILE), sizeBytes: 4, encoding: 'base64' }) },
			[],
		)
		await expect(readFileThroughAgent(transport, '/w/a')).rejects.toMatchObject({
			name: 'RemoteByteCountError',
			expectedBytes: 4,
			receivedBytes: FILE.length,
		})
	})

	it('positive control: an honest single-frame reply arrives', async () => {
		const transport = await guest(
			{
				readFile: () => ({
					ok: true,
					content: base64(FILE),
					sizeBytes: FILE.length,
					encoding: 'base64',
				}),
			},
			[],
		)
		expect((await readFileThroughAgent(transport, '/w/a')).equals(FILE)).toBe(true)
	})
})
