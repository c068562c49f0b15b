import { describe, expect, it } from 'vitest'
import {
	BINARY_CHANNELS,
	BINARY_FRAME_HEADER_BYTES,
	type BinaryChannel,
	binaryEventBytes,
	encodeBinaryFrame,
	encodeBinaryFrameHeader,
	withBinaryFramesRequest,
} from '../../src/wire/binary-frame.js'
import { encodeFrame, FrameError, STREAM_TERMINATOR } from '../../src/wire/frame.js'
import { FrameReader } from '../../src/wire/frame-reader.js'

const reader = (binary: boolean, maxFrameBytes = 1024 * 1024) =>
	new FrameReader({ maxFrameBytes, limitVariable: 'NAMZU_AGENT_MAX_FRAME_BYTES', binary })

function caught(run: () => unknown): FrameError {
	try {
		run()
	} catch (error) {
		if (error instanceof FrameError) return error
		throw error
	}
	throw new Error('expected a FrameError')
}

describe('binary frame layout', () => {
	it.each([
		['data', 0x64],
		['stdout_delta', 0x6f],
		['stderr_delta', 0x65],
	] as const)(
		'%s: 8 hex digits of the raw byte count, "#", channel byte 0x%s, the bytes',
		(channel, byte) => {
			const bytes = Buffer.from([0, 1, 2, 0x0a, 0xff])
			const frame = encodeBinaryFrame(channel, bytes)
			expect(frame.subarray(0, 9).toString('latin1')).toBe('00000005#')
			expect(frame[9]).toBe(byte)
			expect(BINARY_CHANNELS[channel]).toBe(byte)
			expect(frame.subarray(BINARY_FRAME_HEADER_BYTES)).toEqual(bytes)
			expect(encodeBinaryFrameHeader(channel, 5)).toEqual(
				frame.subarray(0, BINARY_FRAME_HEADER_BYTES),
			)
		},
	)

	it('refuses to encode a count the header cannot express', () => {
		expect(() => encodeBinaryFrameHeader('data', 2 ** 32)).toThrow(RangeError)
		expect(() => encodeBinaryFrameHeader('data', -1)).toThrow(RangeError)
	})

	it('asks for binary frames in the body only when told to, leaving other bodies alone', () => {
		expect(withBinaryFramesRequest({ path: 'a' }, true)).toEqual({ path: 'a', binaryFrames: true })
		expect(withBinaryFramesRequest({ path: 'a' }, false)).toEqual({ path: 'a' })
		expect(withBinaryFramesRequest(undefined, true)).toBeUndefined()
	})

	it('binaryEventBytes answers only for events read from binary frames', () => {
		expect(binaryEventBytes({ type: 'data', data: 'aGk=' })).toBeUndefined()
		expect(binaryEventBytes({ type: 'data', bytes: [1, 2] })).toBeUndefined()
		expect(binaryEventBytes({ type: 'data', bytes: Buffer.from('hi') })).toEqual(Buffer.from('hi'))
	})
})

describe('FrameReader and binary frames', () => {
	const wire = Buffer.concat([
		encodeFrame({ type: 'meta' }),
		encodeBinaryFrame('data', Buffer.from('raw\nbytes\u0000')),
		encodeBinaryFrame('stderr_delta', Buffer.alloc(0)),
		encodeFrame({ type: 'end' }),
		STREAM_TERMINATOR,
	])

	function kinds(items: ReturnType<FrameReader['push']>): string[] {
		return items.map((item) =>
			item.kind === 'binary' ? `${item.channel}:${item.payload.toString('latin1')}` : item.kind,
		)
	}

	it('reads JSON and binary frames interleaved, split at every byte boundary', () => {
		for (let split = 0; split <= wire.length; split++) {
			const r = reader(true)
			const items = [...r.push(wire.subarray(0, split)), ...r.push(wire.subarray(split))]
			expect(kinds(items)).toEqual([
				'frame',
				'data:raw\nbytes\u0000',
				'stderr_delta:',
				'frame',
				'end',
			])
		}
	})

	it('refuses a binary header at its ninth byte until binary frames are allowed', () => {
		const error = caught(() =>
			reader(false).push(encodeBinaryFrameHeader('data', 1000).subarray(0, 9)),
		)
		expect(error.code).toBe('binary_frame_not_negotiated')
		expect(error.message).toMatch(/^binary_frame_not_negotiated: /)
	})

	it('hands out at most maxItems, keeping the rest for after allowBinary', () => {
		const r = reader(false)
		const first = r.push(
			Buffer.concat([encodeFrame({ op: 'x' }), encodeBinaryFrame('data', Buffer.from('y'))]),
			1,
		)
		expect(kinds(first)).toEqual(['frame'])
		r.allowBinary()
		expect(kinds(r.push(Buffer.alloc(0)))).toEqual(['data:y'])
	})

	it('holds a binary frame to the same limit as any other, at its header', () => {
		const error = caught(() => reader(true, 4096).push(encodeBinaryFrameHeader('data', 4097)))
		expect(error.code).toBe('frame_too_large')
		expect(error.message).toBe(
			'frame_too_large: announced 4097 bytes, limit 4096 (NAMZU_AGENT_MAX_FRAME_BYTES)',
		)
	})

	it.each([0x00, 0x0a, 0x44, 0xff])('refuses channel byte 0x%s, which names no channel', (byte) => {
		const header = encodeBinaryFrameHeader('data', 3)
		header[9] = byte
		const error = caught(() => reader(true).push(header))
		expect(error.code).toBe('bad_header')
		expect(error.message).toMatch(/^bad_frame_header: binary frame channel byte/)
	})

	it('every channel name maps to a distinct byte', () => {
		const bytes = Object.values(BINARY_CHANNELS)
		expect(new Set(bytes).size).toBe(bytes.length)
		const names: BinaryChannel[] = ['data', 'stdout_delta', 'stderr_delta']
		expect(Object.keys(BINARY_CHANNELS).sort()).toEqual([...names].sort())
	})
})
