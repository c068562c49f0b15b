import { describe, expect, it } from 'vitest'
import {
	base64Length,
	PART_TEMP_BASENAME_MAX_CHARS,
	partBytesFitting,
	partTempPath,
	planParts,
	writeFileBody,
} from '../../../src/host/files/write-file-plan.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { encodeFrame, encodeFrameWithBase64, FRAME_HEADER_BYTES } from '../../../src/wire/frame.js'

const UUID = '0b6f3c2e-6a51-4c0e-9d55-8f1f3e3b6a10'

describe('partTempPath', () => {
	it.each([
		['/w/out/report.csv', `/w/out/.namzu-write-report.csv.${UUID}.part`],
		['report.csv', `.namzu-write-report.csv.${UUID}.part`],
		['sub/dir/a', `sub/dir/.namzu-write-a.${UUID}.part`],
	])('names the temp sibling of %s beside it', (target, expected) => {
		expect(partTempPath(target, UUID)).toBe(expected)
	})

	it('truncates a long basename to 96 characters so the temp name stays short', () => {
		const long = 'n'.repeat(240)
		const temp = partTempPath(`/w/${long}`, UUID)
		expect(PART_TEMP_BASENAME_MAX_CHARS).toBe(96)
		expect(temp).toBe(`/w/.namzu-write-${'n'.repeat(96)}.${UUID}.part`)
		expect(Buffer.byteLength(temp.slice(3))).toBeLessThan(255)
	})

	it('never splits a multi-unit character when truncating', () => {
		const temp = partTempPath(`/w/${'😀'.repeat(120)}`, UUID)
		expect(temp).toBe(`/w/.namzu-write-${'😀'.repeat(96)}.${UUID}.part`)
	})
})

describe('planParts', () => {
	it.each([
		[
			10,
			4,
			[
				[0, 4, false],
				[4, 4, false],
				[8, 2, true],
			],
		],
		[
			8,
			4,
			[
				[0, 4, false],
				[4, 4, true],
			],
		],
		[3, 4, [[0, 3, true]]],
		[0, 4, []],
	])('splits %i bytes into parts of at most %i', (total, partBytes, expected) => {
		expect(
			planParts(total, partBytes).map((slice) => [slice.offset, slice.length, slice.final]),
		).toEqual(expected)
	})
})

describe('frame sizing', () => {
	const transport = new AgentTransport({ kind: 'tcp', host: 'h', port: 1, token: 'tok' })

	it.each([0, 1, 2, 3, 1000, 6 * 1024 * 1024])(
		'computes the exact single-request frame size for a %i-byte body',
		(size) => {
			const content = Buffer.alloc(size, 7)
			// The same message written the slow way: the base64 string spelled out by JSON.stringify.
			const frame = encodeFrame({
				op: 'write-file',
				token: 'tok',
				body: { path: '/w/a.bin', encoding: 'base64', content: content.toString('base64') },
			})
			const computed =
				transport.encodedRequestBytes('write-file', writeFileBody('/w/a.bin', new Uint8Array(0))) +
				base64Length(size)
			expect(computed).toBe(frame.length - FRAME_HEADER_BYTES)
			const fast = encodeFrameWithBase64({
				op: 'write-file',
				token: 'tok',
				body: writeFileBody('/w/a.bin', content),
			})
			expect(fast.equals(frame)).toBe(true)
		},
	)

	it('sizes parts so the largest (final) part frame still fits the limit', () => {
		const limit = 8 * 1024 * 1024
		const temp = partTempPath('/w/big.bin', UUID)
		const total = 20 * 1024 * 1024
		const worst = writeFileBody(temp, new Uint8Array(0), {
			offset: total,
			final: true,
			renameTo: '/w/big.bin',
		})
		const part = partBytesFitting(limit, transport.encodedRequestBytes('write-file', worst))
		const full = writeFileBody(temp, Buffer.alloc(part), {
			offset: total,
			final: true,
			renameTo: '/w/big.bin',
		})
		const payload = transport.encodedRequestBytes('write-file', full)
		expect(payload).toBeLessThanOrEqual(limit)
		expect(limit - payload).toBeLessThan(4)
		expect(part % 3).toBe(0)
	})

	it.each([
		[100, 97, 0],
		[100, 96, 3],
		[100, 0, 75],
	])('fits %i-byte frames with %i bytes of envelope to %i raw bytes', (limit, overhead, bytes) => {
		expect(partBytesFitting(limit, overhead)).toBe(bytes)
	})
})
