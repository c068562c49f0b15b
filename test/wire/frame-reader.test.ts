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
