/**
 * Lent payload buffers of the frame reader: a large binary frame is read into a buffer of its own
 * that is filled again only after its consumer released it. A consumer that keeps its bytes (never
 * releases, or releases late) never sees them change; one that releases gets its buffer reused for
 * a later frame, so a long stream costs a few buffers instead of one per frame.
 */
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { encodeBinaryFrame } from '../../src/wire/binary-frame.js'
import { encodeFrame, STREAM_TERMINATOR } from '../../src/wire/frame.js'
import { type FrameItem, FrameReader, LENT_PAYLOAD_MIN_BYTES } from '../../src/wire/frame-reader.js'
import { PAYLOAD_POOL_BUFFERS } from '../../src/wire/payload-pool.js'

const KiB = 1024
const EMPTY = Buffer.alloc(0)
type BinaryItem = Extract<FrameItem, { kind: 'binary' }>

const reader = () =>
	new FrameReader({
		maxFrameBytes: 16 * 1024 * KiB,
		limitVariable: 'NAMZU_AGENT_MAX_FRAME_BYTES',
		binary: true,
	})

/** Pushes `bytes` in pieces of `piece` bytes; answers every item, in order. */
function pushInPieces(target: FrameReader, bytes: Buffer, piece: number): FrameItem[] {
	const items: FrameItem[] = []
	for (let at = 0; at < bytes.length; at += piece) {
		items.push(...target.push(bytes.subarray(at, Math.min(bytes.length, at + piece))))
	}
	return items
}

function binaryItems(items: readonly FrameItem[]): BinaryItem[] {
	return items.filter((item): item is BinaryItem => item.kind === 'binary')
}

describe('frame reader: lent payload buffers', () => {
	it.each([
		['whole frames per chunk', 300 * KiB + 10],
		['64 KiB socket chunks', 64 * KiB],
		['odd 7 KiB + 3 chunks', 7 * KiB + 3],
	])('a consumer that keeps every payload and releases none sees none change (%s)', (_, piece) => {
		const bodies = Array.from({ length: 8 }, () => randomBytes(300 * KiB))
		const target = reader()
		const wire = Buffer.concat(bodies.map((body) => encodeBinaryFrame('data', body)))
		const items = binaryItems(pushInPieces(target, wire, piece))
		expect(
			items.map((item) => item.payload.equals(bodies[items.indexOf(item)] ?? Buffer.alloc(0))),
		).toEqual(bodies.map(() => true))
		const backings = new Set(items.map((item) => item.payload.buffer))
		expect(backings.size === bodies.length).toBe(true)
	})

	it('a consumer that releases each payload once written gets its buffer back for the next frame', () => {
		const target = reader()
		const bodies = Array.from({ length: 6 }, () => randomBytes(256 * KiB))
		const seen: ArrayBufferLike[] = []
		for (const body of bodies) {
			const [item] = binaryItems(pushInPieces(target, encodeBinaryFrame('data', body), 64 * KiB))
			expect(item?.payload.equals(body)).toBe(true)
			if (item) seen.push(item.payload.buffer)
			item?.release()
		}
		expect(new Set(seen).size === 1).toBe(true)
		expect(target.payloadPool.lentCount).toBe(0)
	})

	// Socket chunks are 64 KiB, so a large frame's payload is always lent; the tests feed it so.
	it('a slow consumer holding one payload while later frames arrive keeps its bytes intact', () => {
		const target = reader()
		const [first, second, third] = [
			randomBytes(200 * KiB),
			randomBytes(200 * KiB),
			randomBytes(200 * KiB),
		]
		const [a] = binaryItems(pushInPieces(target, encodeBinaryFrame('data', first), 64 * KiB))
		// The second frame arrives while the first is still held: it is read into another buffer.
		const [b] = binaryItems(pushInPieces(target, encodeBinaryFrame('data', second), 64 * KiB))
		expect(a !== undefined && b !== undefined && a.payload.buffer !== b.payload.buffer).toBe(true)
		// Released late, the first buffer carries the third frame; the second is untouched.
		a?.release()
		const [c] = binaryItems(pushInPieces(target, encodeBinaryFrame('data', third), 64 * KiB))
		expect(a !== undefined && c?.payload.buffer === a.payload.buffer).toBe(true)
		expect(c?.payload.equals(third)).toBe(true)
		expect(b?.payload.equals(second)).toBe(true)
	})

	it('a second release of the same payload does not lend its buffer twice', () => {
		const target = reader()
		const [a] = binaryItems(
			pushInPieces(target, encodeBinaryFrame('data', randomBytes(128 * KiB)), 64 * KiB),
		)
		a?.release()
		a?.release()
		const next = () =>
			binaryItems(pushInPieces(target, encodeBinaryFrame('data', randomBytes(128 * KiB)), 64 * KiB))
		const [b] = next()
		const [c] = next()
		expect(b !== undefined && c !== undefined && b.payload.buffer !== c.payload.buffer).toBe(true)
	})

	it('keeps at most a few free buffers, and none larger than its byte bound', () => {
		const target = reader()
		const frames = Array.from({ length: 10 }, () =>
			encodeBinaryFrame('data', randomBytes(256 * KiB)),
		)
		const held = binaryItems(pushInPieces(target, Buffer.concat(frames), 64 * KiB))
		expect(held).toHaveLength(10)
		for (const item of held) item.release()
		expect(target.payloadPool.freeCount).toBe(PAYLOAD_POOL_BUFFERS)
		const bigFrame = encodeBinaryFrame('data', randomBytes(8 * 1024 * KiB))
		const [big] = binaryItems(pushInPieces(target, bigFrame, 64 * KiB))
		big?.release()
		expect(target.payloadPool.freeCount).toBe(PAYLOAD_POOL_BUFFERS)
	})

	it('a small binary frame is a view of the shared buffer; its release changes nothing', () => {
		const target = reader()
		const small = randomBytes(LENT_PAYLOAD_MIN_BYTES - 1)
		const [item] = binaryItems(target.push(encodeBinaryFrame('data', small)))
		item?.release()
		expect(target.payloadPool.freeCount).toBe(0)
		const [next] = binaryItems(target.push(encodeBinaryFrame('data', randomBytes(100))))
		expect(next?.payload.length).toBe(100)
		expect(item?.payload.equals(small)).toBe(true)
	})

	it('frames behind a lent payload in the same chunk are parsed in order, byte for byte', () => {
		const target = reader()
		const body = randomBytes(300 * KiB)
		const head = encodeBinaryFrame('data', body)
		const tail = Buffer.concat([encodeFrame({ type: 'end' }), STREAM_TERMINATOR])
		// The header and part of the payload first, then the rest of it with the next frames.
		const items = [
			...target.push(head.subarray(0, 1000)),
			...target.push(Buffer.concat([head.subarray(1000), tail])),
		]
		expect(items.map((item) => item.kind)).toEqual(['binary', 'frame', 'end'])
		expect(binaryItems(items)[0]?.payload.equals(body)).toBe(true)
		expect(target.bufferedBytes).toBe(0)
	})

	it('counts a partly read lent payload as buffered', () => {
		const target = reader()
		const frame = encodeBinaryFrame('stdout_delta', randomBytes(512 * KiB))
		target.push(frame.subarray(0, 100 * KiB))
		expect(target.bufferedBytes).toBe(100 * KiB - 10)
	})
})

/**
 * Reads that skip a copy: the socket reads straight into `readTarget()` (the rest of a large
 * payload, or a header-sized buffer right after one), and a consumer's placement puts a large
 * binary payload in its own buffer at the payload's offset within its channel.
 */
describe('frame reader: direct reads and placement', () => {
	/** Feeds `wire` as a socket with `onread` would: into the reader's target when it names one. */
	function readDirectly(target: FrameReader, wire: Buffer, piece: number): FrameItem[] {
		const items: FrameItem[] = []
		let at = 0
		while (at < wire.length) {
			const into = target.readTarget()
			const count = Math.min(piece, into?.length ?? piece, wire.length - at)
			if (into) {
				wire.copy(into, 0, at, at + count)
				items.push(...target.pushRead(into, count))
			} else items.push(...target.push(wire.subarray(at, at + count)))
			at += count
		}
		return items
	}

	it('yields the same frames, byte for byte, when reads land in its targets', () => {
		const bodies = [300 * KiB, 100, 70 * KiB, 1 * KiB * KiB].map((size) => randomBytes(size))
		const wire = Buffer.concat([
			...bodies.map((body) => encodeBinaryFrame('data', body)),
			encodeFrame({ type: 'end', bytesSent: 1 }),
			STREAM_TERMINATOR,
		])
		for (const piece of [64 * KiB, 7 * KiB + 3, 256 * KiB]) {
			const items = readDirectly(reader(), wire, piece)
			expect(items.map((item) => item.kind)).toEqual([
				'binary',
				'binary',
				'binary',
				'binary',
				'frame',
				'end',
			])
			expect(binaryItems(items).map((item, i) => item.payload.equals(bodies[i] ?? EMPTY))).toEqual(
				bodies.map(() => true),
			)
		}
	})

	it('reads a placed payload into the consumer buffer at its offset in the channel', () => {
		const whole = Buffer.alloc(600 * KiB)
		const asked: Array<[string, number, number]> = []
		const target = new FrameReader({
			maxFrameBytes: 16 * 1024 * KiB,
			limitVariable: 'NAMZU_AGENT_MAX_FRAME_BYTES',
			binary: true,
			place: (channel, offset, length) => {
				asked.push([channel, offset, length])
				return channel === 'data' ? whole.subarray(offset, offset + length) : undefined
			},
		})
		const bodies = [randomBytes(200 * KiB), randomBytes(100), randomBytes(300 * KiB)]
		const wire = Buffer.concat([
			encodeBinaryFrame('stdout_delta', randomBytes(80 * KiB)),
			...bodies.map((body) => encodeBinaryFrame('data', body)),
		])
		const items = binaryItems(readDirectly(target, wire, 64 * KiB))
		expect(asked).toEqual([
			['stdout_delta', 0, 80 * KiB],
			['data', 0, 200 * KiB],
			['data', 200 * KiB + 100, 300 * KiB],
		])
		const [first, , third] = items.slice(1)
		expect(first?.payload.buffer).toBe(whole.buffer)
		expect(third?.payload.byteOffset).toBe(whole.byteOffset + 200 * KiB + 100)
		expect(whole.subarray(0, 200 * KiB).equals(bodies[0] ?? EMPTY)).toBe(true)
		expect(whole.subarray(200 * KiB + 100, 500 * KiB + 100).equals(bodies[2] ?? EMPTY)).toBe(true)
		// A placed payload is the consumer's: releasing it lends nothing.
		first?.release()
		expect(target.payloadPool.freeCount).toBe(0)
	})

	it('lends a buffer when the placement declines (a payload past the consumer buffer)', () => {
		const small = Buffer.alloc(100 * KiB)
		const target = new FrameReader({
			maxFrameBytes: 16 * 1024 * KiB,
			limitVariable: 'NAMZU_AGENT_MAX_FRAME_BYTES',
			binary: true,
			place: (_channel, offset, length) =>
				offset + length <= small.length ? small.subarray(offset, offset + length) : undefined,
		})
		const body = randomBytes(300 * KiB)
		const [item] = binaryItems(readDirectly(target, encodeBinaryFrame('data', body), 64 * KiB))
		expect(item?.payload.buffer).not.toBe(small.buffer)
		expect(item?.payload.equals(body)).toBe(true)
	})
})
