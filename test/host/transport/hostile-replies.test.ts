/**
 * A hostile guest's answers, through the real transport over a real socket: the peer here is the
 * attacker (it writes raw frames the real agent never would), and the host is what is under test.
 * Each attack is refused by the bound that names it — at the header, or by the scan at the first
 * byte past a bound — with a `RemoteReplyBoundError` naming the op, before the frame is buffered
 * whole and before `JSON.parse` sees it. Positive controls: a legitimately large listing (streamed
 * by the real agent, and in one reply under its ceiling), a whole-file reply carried as a bulk
 * string, and a reply at exactly the depth bound.
 */
import { mkdir, writeFile } from 'node:fs/promises'
import type { Socket } from 'node:net'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import {
	listFilesThroughAgent,
	MAX_LISTING_BYTES,
} from '../../../src/host/files/agent-file-list.js'
import { readFileThroughAgent } from '../../../src/host/files/agent-file-read.js'
import { RemoteReplyBoundError } from '../../../src/host/refusals/refusal-errors.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { AgentListingTooLargeError } from '../../../src/host/transport/transport-errors.js'
import { JsonShapeError } from '../../../src/wire/json-shape.js'
import { LIST_FILES_BATCH_ENTRIES } from '../../../src/wire/protocol.js'
import {
	CONTROL_REPLY_FRAME_BYTES,
	MAX_PARSED_REPLY_BYTES,
	REPLY_JSON_MAX_DEPTH,
	replyBoundsOf,
} from '../../../src/wire/reply-bounds.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import {
	type FakeAgent,
	type FakeHandler,
	healthzReply,
	reply,
	startFakeAgent,
} from '../fake-agent-server.js'

const MiB = 1024 * 1024
const fakes: FakeAgent[] = []
afterEach(async () => {
	vi.restoreAllMocks()
	for (const fake of fakes.splice(0)) await fake.close()
})

async function hostile(handler: FakeHandler): Promise<AgentTransport> {
	const fake = await startFakeAgent(handler)
	fakes.push(fake)
	return new AgentTransport({ kind: 'unix', path: fake.path ?? '' }, { connectRetryBudgetMs: 0 })
}

function header(bytes: number): string {
	return bytes.toString(16).padStart(8, '0')
}

/**
 * Writes `header\n` then `chunks` of the payload one at a time, each only after the last was
 * flushed, and stops at the first the host does not take (it closed). Resolves with how many of
 * the payload's bytes left this peer before that.
 */
function trickle(socket: Socket, announced: number, chunks: Iterable<Buffer>): Promise<number> {
	return new Promise((resolve) => {
		let sent = 0
		let done = false
		const finish = () => {
			if (done) return
			done = true
			resolve(sent)
		}
		socket.once('close', finish)
		socket.once('error', finish)
		const iterator = chunks[Symbol.iterator]()
		const next = () => {
			if (done || socket.destroyed) return finish()
			const chunk = iterator.next()
			if (chunk.done) return
			socket.write(chunk.value, (error) => {
				if (error) return finish()
				sent += chunk.value.length
				setImmediate(next)
			})
		}
		socket.write(`${header(announced)}\n`, () => next())
	})
}

/** `[`×depth then `]`×depth, in 64 KiB chunks. */
function* nested(depth: number): Generator<Buffer> {
	const open = Buffer.alloc(64 * 1024, '[')
	const close = Buffer.alloc(64 * 1024, ']')
	for (let at = 0; at < depth; at += open.length)
		yield open.subarray(0, Math.min(open.length, depth - at))
	for (let at = 0; at < depth; at += close.length)
		yield close.subarray(0, Math.min(close.length, depth - at))
}

/** Every string JSON.parse is handed from now on, by length and first bytes. */
function watchParser(): Array<{ length: number; head: string }> {
	const seen: Array<{ length: number; head: string }> = []
	const real = JSON.parse
	vi.spyOn(JSON, 'parse').mockImplementation(
		(text: string, reviver?: Parameters<typeof JSON.parse>[1]) => {
			seen.push({ length: text.length, head: text.slice(0, 16) })
			return real(text, reviver)
		},
	)
	return seen
}

describe('a hostile answer to a control op', () => {
	it('is refused at the header when it announces more than the op can answer (120 MB of nesting to healthz)', async () => {
		let delivered: Promise<number> = Promise.resolve(0)
		const transport = await hostile((_request, socket) => {
			delivered = trickle(socket, 120_000_000, nested(60_000_000))
		})
		const parsed = watchParser()
		const error = await transport.healthz().catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(RemoteReplyBoundError)
		const bound = error as RemoteReplyBoundError
		expect(bound.op).toBe('healthz')
		expect(bound.bound).toBe('frame-bytes')
		expect(bound.limit).toBe(CONTROL_REPLY_FRAME_BYTES)
		expect(bound.message).toMatch(/^healthz: /)
		// The host closed on the header: the peer got at most a socket buffer's worth out.
		expect(await delivered).toBeLessThan(8 * MiB)
		expect(parsed.filter((call) => call.head.startsWith('[['))).toEqual([])
	})

	it('refuses a small control reply nested one level past the bound, and parses one at the bound', async () => {
		const depth = REPLY_JSON_MAX_DEPTH
		const atBound = `{"ok":true,"protocolVersion":2,"features":[],"x":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`
		const pastBound = `{"ok":true,"protocolVersion":2,"features":[],"x":${'['.repeat(depth)}${']'.repeat(depth)}}`
		let answer = atBound
		const transport = await hostile((_request, socket) => {
			socket.end(`${header(Buffer.byteLength(answer))}\n${answer}`)
		})
		await expect(transport.request('healthz', undefined)).resolves.toMatchObject({ ok: true })
		answer = pastBound
		const error = await transport.request('healthz', undefined).catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(RemoteReplyBoundError)
		expect(error).toMatchObject({ op: 'healthz', bound: 'depth', limit: depth })
		const shape =
			(error as Error).cause instanceof Error ? ((error as Error).cause as Error).cause : undefined
		expect(shape).toBeInstanceOf(JsonShapeError)
		// The byte that broke it is the bracket opening level depth + 1.
		expect((shape as JsonShapeError).at).toBe(pastBound.indexOf('"x":') + 4 + depth - 1)
	})
})

describe('a hostile event on a data stream', () => {
	it('refuses nesting at depth N+1 as the bytes arrive, long before the frame is whole, and JSON.parse never sees it', async () => {
		const announced = replyBoundsOf('execute').frameBytes
		let delivered: Promise<number> = Promise.resolve(0)
		const transport = await hostile((_request, socket) => {
			delivered = trickle(socket, announced, nested(announced / 2))
		})
		const parsed = watchParser()
		const drain = async () => {
			for await (const _ of transport.stream('execute', { command: 'x' })) {
			}
		}
		const error = await drain().catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(RemoteReplyBoundError)
		expect(error).toMatchObject({ op: 'execute', bound: 'depth', limit: REPLY_JSON_MAX_DEPTH })
		expect(await delivered).toBeLessThan(announced / 2)
		expect(parsed.filter((call) => call.head.startsWith('[['))).toEqual([])
	})

	it('refuses an event wider than an event can be (a flat array of 0s)', async () => {
		const { json } = replyBoundsOf('read-file-stream')
		const wide = `{"type":"data","data":[${'0,'.repeat(json.maxValues)}0]}`
		const transport = await hostile((_request, socket) => {
			socket.end(`${header(wide.length)}\n${wide}`)
		})
		const parsed = watchParser()
		const drain = async () => {
			for await (const _ of transport.stream('read-file-stream', { path: 'x' })) {
			}
		}
		const error = await drain().catch((caught: unknown) => caught)
		expect(error).toMatchObject({ op: 'read-file-stream', bound: 'values', limit: json.maxValues })
		expect(parsed.filter((call) => call.length >= wide.length)).toEqual([])
	})
})

describe('a whole-file read-file reply (a guest without read-file-stream)', () => {
	function legacyGuest(content: () => Buffer): Promise<AgentTransport> {
		return hostile((request, socket) => {
			if (request.op === 'healthz') return reply(socket, healthzReply([]))
			const body = content()
			const head = Buffer.from('{"ok":true,"content":"')
			const tail = Buffer.from(`","sizeBytes":${body.length},"encoding":"base64"}`)
			const length = head.length + body.length + tail.length
			socket.end(Buffer.concat([Buffer.from(`${header(length)}\n`), head, body, tail]))
		})
	}

	it('refuses content JSON.parse would have to decode past MAX_PARSED_REPLY_BYTES (escapes)', async () => {
		const escaped = Buffer.alloc(MAX_PARSED_REPLY_BYTES + 2 * MiB, '\\n')
		const transport = await legacyGuest(() => escaped)
		const parsed = watchParser()
		const error = await readFileThroughAgent(transport, '/w/f').catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(RemoteReplyBoundError)
		expect(error).toMatchObject({
			op: 'read-file',
			bound: 'parsed-bytes',
			limit: MAX_PARSED_REPLY_BYTES,
		})
		expect(parsed.filter((call) => call.length > MAX_PARSED_REPLY_BYTES)).toEqual([])
	})

	it('positive control: 24 MiB of base64 arrives as a bulk string, kept as bytes and never parsed', async () => {
		const file = Buffer.alloc(18 * MiB, 7)
		const transport = await legacyGuest(() => Buffer.from(file.toString('base64')))
		const parsed = watchParser()
		const content = await readFileThroughAgent(transport, '/w/f')
		expect(content.equals(file)).toBe(true)
		expect(parsed.filter((call) => call.length > MiB)).toEqual([])
	})
})

describe('listings', () => {
	let agent: StartedAgent

	beforeAll(async () => {
		agent = await startAgent()
	})
	afterAll(async () => {
		await agent?.stop()
	})

	it('positive control: the real agent streams a listing far larger than one batch, whole and in order', async () => {
		const directory = join(agent.workspace, 'many')
		await mkdir(directory)
		const count = LIST_FILES_BATCH_ENTRIES * 8 + 3
		const names = Array.from(
			{ length: count },
			(_, i) => `file-${String(i).padStart(6, '0')}-${'n'.repeat(100)}`,
		)
		for (let at = 0; at < names.length; at += 256) {
			await Promise.all(
				names.slice(at, at + 256).map((name) => writeFile(join(directory, name), 'x')),
			)
		}
		const transport = new AgentTransport({ kind: 'unix', path: agent.socketPath ?? '' })
		const listed = await listFilesThroughAgent(transport, directory)
		expect(listed.map((entry) => entry.path)).toEqual(names.map((name) => join(directory, name)))
		expect(listed.every((entry) => entry.size === 1)).toBe(true)
	})

	it('positive control: a guest without the stream answers 3 MiB in one reply under the listing ceiling', async () => {
		const entries = Array.from({ length: 30_000 }, (_, i) => ({
			path: `/w/${'p'.repeat(80)}-${i}`,
			size: i,
		}))
		const transport = await hostile((request, socket) => {
			if (request.op === 'healthz') return reply(socket, healthzReply(['list-files']))
			reply(socket, { ok: true, entries })
		})
		const listed = await listFilesThroughAgent(transport, '/w')
		expect(listed).toHaveLength(entries.length)
		expect(listed[29_999]).toEqual(entries[29_999])
	})

	it('refuses a streamed listing past what the host holds of one listing, by name', async () => {
		const path = `/w/${'q'.repeat(4000)}`
		// As many entries per event as an event's value bound admits (3 values an entry).
		const batch = JSON.stringify({
			type: 'entries',
			entries: Array.from({ length: 1300 }, () => ({ path, size: 1 })),
		})
		const event = Buffer.from(`${header(Buffer.byteLength(batch))}\n${batch}`)
		const transport = await hostile(async (request, socket) => {
			if (request.op === 'healthz') return reply(socket, healthzReply(['list-files-stream']))
			for (
				let sent = 0;
				sent < MAX_LISTING_BYTES + event.length && !socket.destroyed;
				sent += event.length
			) {
				if (!socket.write(event)) await new Promise((resolve) => socket.once('drain', resolve))
			}
		})
		const error = await listFilesThroughAgent(transport, '/w').catch((caught: unknown) => caught)
		expect(error).toBeInstanceOf(AgentListingTooLargeError)
		expect(error).toMatchObject({ path: '/w', limitBytes: MAX_LISTING_BYTES })
	})

	it('refuses a one-reply listing announced past its ceiling', async () => {
		const ceiling = replyBoundsOf('list-files').frameBytes
		const transport = await hostile((request, socket) => {
			if (request.op === 'healthz') return reply(socket, healthzReply(['list-files']))
			socket.write(`${header(ceiling + 1)}\n{"ok":true,"entries":[`)
		})
		await expect(listFilesThroughAgent(transport, '/w')).rejects.toMatchObject({
			name: 'RemoteReplyBoundError',
			op: 'list-files',
			bound: 'frame-bytes',
		})
	})
})
