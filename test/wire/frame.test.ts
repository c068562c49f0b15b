import { describe, expect, it } from 'vitest'
import { asciiMemberBytes } from '../../src/wire/ascii-string-members.js'
import {
	Base64Bytes,
	encodeBase64DataFrame,
	encodedFrameBytes,
	encodeFrame,
	encodeFrameWithBase64,
	FrameError,
	parseFramePayload,
	STREAM_TERMINATOR,
} from '../../src/wire/frame.js'
import { FrameReader } from '../../src/wire/frame-reader.js'

const reader = (maxFrameBytes = 1024 * 1024) =>
	new FrameReader({ maxFrameBytes, limitVariable: 'NAMZU_AGENT_MAX_FRAME_BYTES' })

function payloads(items: ReturnType<FrameReader['push']>): unknown[] {
	return items.map((item) => (item.kind === 'end' ? 'END' : parseFramePayload(item.payload)))
}

describe('frame codec', () => {
	it('encodes 8 lowercase hex digits of payload length, a newline, then UTF-8 JSON', () => {
		const frame = encodeFrame({ op: 'healthz', note: 'é' })
		const json = Buffer.from(JSON.stringify({ op: 'healthz', note: 'é' }), 'utf8')
		expect(frame.subarray(0, 9).toString('latin1')).toBe(
			`${json.length.toString(16).padStart(8, '0')}\n`,
		)
		expect(frame.subarray(9)).toEqual(json)
		expect(encodedFrameBytes({ op: 'healthz', note: 'é' })).toBe(frame.length)
	})

	it('reads frames split at every possible byte boundary', () => {
		const wire = Buffer.concat([
			encodeFrame({ a: 1 }),
			encodeFrame({ b: 'two' }),
			STREAM_TERMINATOR,
		])
		for (let split = 0; split <= wire.length; split++) {
			const r = reader()
			const items = [...r.push(wire.subarray(0, split)), ...r.push(wire.subarray(split))]
			expect(payloads(items)).toEqual([{ a: 1 }, { b: 'two' }, 'END'])
			expect(r.bufferedBytes).toBe(0)
		}
	})

	it('keeps handed-out payloads intact while later frames reuse and grow the buffer', () => {
		const frames = Array.from({ length: 6 }, (_, i) =>
			encodeFrame({ type: 'data', data: String(i).repeat(50_000 + i * 7_000) }),
		)
		const wire = Buffer.concat(frames)
		for (const chunkSize of [1000, 65_536, 70_001, wire.length]) {
			const r = reader()
			const payloadsSeen: Buffer[] = []
			for (let i = 0; i < wire.length; i += chunkSize) {
				for (const item of r.push(wire.subarray(i, i + chunkSize))) {
					if (item.kind === 'frame') payloadsSeen.push(item.payload)
				}
			}
			// Checked only after every push: a view overwritten by a later push would show here.
			expect(payloadsSeen.map((payload) => parseFramePayload(payload))).toEqual(
				Array.from({ length: 6 }, (_, i) => ({
					type: 'data',
					data: String(i).repeat(50_000 + i * 7_000),
				})),
			)
		}
	})

	it('parses a data event through the fast path exactly as JSON.parse would', () => {
		const bytes = Buffer.alloc(100_000)
		for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31) % 256
		const fast = encodeBase64DataFrame(bytes)
		expect(fast).toEqual(encodeFrame({ type: 'data', data: bytes.toString('base64') }))
		const [item] = reader().push(fast)
		const event = item?.kind === 'frame' ? parseFramePayload(item.payload) : undefined
		expect(event).toEqual({ type: 'data', data: bytes.toString('base64') })
		expect(Buffer.from(String(event?.data), 'base64').equals(bytes)).toBe(true)
		for (const text of ['héllo wörld', 'tab\there', 'quote " inside']) {
			const frame = encodeFrame({ type: 'data', data: text })
			const [parsed] = reader().push(frame)
			expect(parsed?.kind === 'frame' ? parseFramePayload(parsed.payload) : undefined).toEqual({
				type: 'data',
				data: text,
			})
		}
	})

	it('parses a bulk request whose last member is a long string as JSON.parse would, keeping its bytes', () => {
		const content = 'QUJD'.repeat(300_000)
		const message = {
			op: 'write-file',
			token: 't',
			body: { path: '/w/a', encoding: 'base64', content },
		}
		const payload = Buffer.from(JSON.stringify(message))
		const parsed = parseFramePayload(payload)
		const body = parsed.body as Record<string, unknown>
		expect(asciiMemberBytes(body, 'content')?.toString('latin1')).toBe(content)
		expect(parsed).toEqual(message)
	})

	it.each([
		['an escape in the long string', { body: { content: `${'A'.repeat(600_000)}\\n` } }],
		['a non-string last member', { body: { content: 'A'.repeat(600_000), n: 1 } }],
		['a long string inside an array', { list: ['A'.repeat(600_000)] }],
		['non-ASCII text', { body: { content: `é${'A'.repeat(600_000)}` } }],
	])('falls back to JSON.parse for %s', (_title, message) => {
		const payload = Buffer.from(JSON.stringify(message))
		expect(parseFramePayload(Buffer.concat([payload]))).toEqual(message)
	})

	it('encodeFrameWithBase64 writes Base64Bytes exactly as JSON.stringify would write the string', () => {
		const bytes = Buffer.alloc(200_001)
		for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 17) % 256
		const fast = encodeFrameWithBase64({
			op: 'x',
			body: { a: 'é', content: new Base64Bytes(bytes) },
		})
		const slow = encodeFrame({ op: 'x', body: { a: 'é', content: bytes.toString('base64') } })
		expect(fast.equals(slow)).toBe(true)
		expect(encodedFrameBytes({ op: 'x', body: { a: 'é', content: new Base64Bytes(bytes) } })).toBe(
			slow.length,
		)
	})

	it('reads a frame delivered one byte at a time', () => {
		const r = reader()
		const items = []
		for (const byte of encodeFrame({ text: 'x'.repeat(300) }))
			items.push(...r.push(Buffer.from([byte])))
		expect(payloads(items)).toEqual([{ text: 'x'.repeat(300) }])
	})

	it('reassembles a multi-megabyte frame from many chunks', () => {
		const big = { data: 'y'.repeat(5 * 1024 * 1024) }
		const wire = encodeFrame(big)
		const r = reader(8 * 1024 * 1024)
		const items = []
		for (let i = 0; i < wire.length; i += 65536) items.push(...r.push(wire.subarray(i, i + 65536)))
		expect(payloads(items)).toEqual([big])
	})

	it('refuses on the ninth byte when it is not a newline', () => {
		const r = reader()
		expect(r.push(Buffer.from('00000001'))).toEqual([])
		expect(() => r.push(Buffer.from('x'))).toThrow(FrameError)
	})

	it('refuses a non-hex byte in the length prefix as soon as it arrives', () => {
		const r = reader()
		expect(() => r.push(Buffer.from('00z'))).toThrow(/bad_frame_header/)
	})

	it('refuses an announced length above the limit, naming length, limit and variable', () => {
		const r = reader(100)
		let caught: unknown
		try {
			r.push(Buffer.from('00000065\n'))
		} catch (error) {
			caught = error
		}
		expect(caught).toBeInstanceOf(FrameError)
		const error = caught as FrameError
		expect(error.code).toBe('frame_too_large')
		expect(error.message).toBe(
			'frame_too_large: announced 101 bytes, limit 100 (NAMZU_AGENT_MAX_FRAME_BYTES)',
		)
		expect(error.announcedBytes).toBe(101)
		expect(error.limitBytes).toBe(100)
	})

	it('applies a changed limit to the next frame', () => {
		const r = new FrameReader({
			maxFrameBytes: 10,
			limitVariable: 'NAMZU_AGENT_MAX_PREAUTH_FRAME_BYTES',
		})
		expect(() => r.push(encodeFrame({ long: 'enough to pass ten' }))).toThrow(
			/NAMZU_AGENT_MAX_PREAUTH_FRAME_BYTES/,
		)
		const r2 = new FrameReader({ maxFrameBytes: 10, limitVariable: 'X' })
		r2.setLimit(1000, 'NAMZU_AGENT_MAX_FRAME_BYTES')
		expect(payloads(r2.push(encodeFrame({ long: 'enough to pass ten' })))).toEqual([
			{ long: 'enough to pass ten' },
		])
	})

	it('accepts uppercase hex on read', () => {
		const json = Buffer.from(JSON.stringify({ k: 'v'.repeat(200) }))
		const header = Buffer.from(`${json.length.toString(16).toUpperCase().padStart(8, '0')}\n`)
		expect(payloads(reader().push(Buffer.concat([header, json])))).toEqual([{ k: 'v'.repeat(200) }])
	})

	it('parseFramePayload refuses JSON that is not an object', () => {
		expect(() => parseFramePayload(Buffer.from('[1]'))).toThrow(TypeError)
		expect(() => parseFramePayload(Buffer.from('{'))).toThrow(SyntaxError)
	})
})
