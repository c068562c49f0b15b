import { describe, expect, it } from 'vitest'
import { resolveReadRange, resolveStreamRange } from '../../../src/agent/files/read-range.js'
import { isTempFileName, tempSiblingName } from '../../../src/agent/files/temp-sibling.js'
import { parseWriteRequest } from '../../../src/agent/files/write-request.js'
import type { OpRefusal } from '../../../src/agent/handler/op-refusal.js'
import { refusalOf } from '../refusal-of.js'

describe('resolveReadRange', () => {
	const limit = 1024
	it.each([
		[{}, undefined],
		[{ offset: 0, length: 10, encoding: 'base64' }, undefined],
		[{ offset: 5, encoding: 'base64' }, undefined],
		[{ offset: 0, length: 10 }, 'read_file_range_requires_base64'],
		[{ offset: 0, length: 10, encoding: 'utf8' }, 'read_file_range_requires_base64'],
		[{ offset: -1, length: 10, encoding: 'base64' }, 'read_file_invalid_offset'],
		[{ offset: 1.5, length: 10, encoding: 'base64' }, 'read_file_invalid_offset'],
		[{ offset: '3', length: 10, encoding: 'base64' }, 'read_file_invalid_offset'],
		[{ offset: 0, length: -2, encoding: 'base64' }, 'read_file_invalid_length'],
		[{ offset: 0, length: Number.NaN, encoding: 'base64' }, 'read_file_invalid_length'],
	])('%j is refused with %s', (body, expected) => {
		expect(refusalOf(() => resolveReadRange(body, limit))).toBe(expected)
	})

	it('refuses a length above the ceiling, naming the limit and its variable', () => {
		try {
			resolveReadRange({ offset: 0, length: limit + 1, encoding: 'base64' }, limit)
			expect.unreachable()
		} catch (error) {
			expect((error as OpRefusal).error).toBe(
				'read_file_range_too_large: requested 1025 bytes, limit 1024 (NAMZU_AGENT_READ_FILE_RANGE_BYTES)',
			)
		}
	})

	it('accepts a length exactly at the ceiling', () => {
		expect(resolveReadRange({ offset: 3, length: limit, encoding: 'base64' }, limit)).toEqual({
			ranged: true,
			offset: 3,
			length: limit,
		})
	})

	it('validates stream offsets and lengths with the same vocabulary and no ceiling', () => {
		expect(resolveStreamRange({})).toEqual({ offset: 0 })
		expect(resolveStreamRange({ offset: 2, length: 10 ** 12 })).toEqual({
			offset: 2,
			length: 10 ** 12,
		})
		expect(refusalOf(() => resolveStreamRange({ offset: -1 }))).toBe('read_file_invalid_offset')
		expect(refusalOf(() => resolveStreamRange({ length: 'x' }))).toBe('read_file_invalid_length')
	})
})

describe('parseWriteRequest', () => {
	it.each([
		[{ content: 'x' }, 'missing_path_or_content'],
		[{ path: 'a' }, 'missing_path_or_content'],
		[{ path: '', content: 'x' }, 'missing_path_or_content'],
		[{ path: 'a', content: 'x', part: 'yes' }, 'write_part_invalid_shape'],
		[{ path: 'a', content: 'x', part: null }, 'write_part_invalid_shape'],
		[{ path: 'a', content: 'x', part: [] }, 'write_part_invalid_shape'],
		[{ path: 'a', content: 'x', part: 0 }, 'write_part_invalid_shape'],
		[{ path: 'a', content: 'x', part: {} }, 'write_part_invalid_offset'],
		[{ path: 'a', content: 'x', part: { offset: -1 } }, 'write_part_invalid_offset'],
		[{ path: 'a', content: 'x', part: { offset: 0.5 } }, 'write_part_invalid_offset'],
		[
			{ path: 'a', content: 'x', part: { offset: 0, final: true } },
			'write_part_missing_rename_target',
		],
		[
			{ path: 'a', content: 'x', part: { offset: 0, final: true, renameTo: '' } },
			'write_part_missing_rename_target',
		],
	])('%j is refused with %s', (body, expected) => {
		expect(refusalOf(() => parseWriteRequest(body))).toBe(expected)
	})

	it('decodes base64 content and defaults to utf8', () => {
		const whole = parseWriteRequest({ path: 'a', content: 'AAEC', encoding: 'base64' })
		expect(whole.kind === 'whole' && [...whole.content]).toEqual([0, 1, 2])
		const text = parseWriteRequest({ path: 'a', content: 'é' })
		expect(text.kind === 'whole' && text.content.length).toBe(2)
	})

	it('reads a discard without content and a final part with its rename target', () => {
		expect(parseWriteRequest({ path: 't', part: { discard: true } })).toEqual({
			kind: 'discard',
			path: 't',
		})
		const final = parseWriteRequest({
			path: 't',
			content: '',
			part: { offset: 4, final: true, renameTo: 'target' },
		})
		expect(final).toMatchObject({ kind: 'part', offset: 4, renameTo: 'target' })
	})
})

describe('temp sibling names', () => {
	it('adds exactly 55 bytes to the target basename', () => {
		expect(tempSiblingName('report.txt').length).toBe('report.txt'.length + 55)
	})

	it.each([
		['.namzu-write-a.txt.0b7e9c4e-6a5f-4b0f-8c1e-2f1d1c0b9a8e.part', true],
		['.namzu-write-x.part', true],
		['.namzu-write-.part', false],
		['a.txt', false],
		['.namzu-write-a.txt', false],
		['namzu-write-a.part', false],
	])('%s is one of the agent temp files: %s', (name, expected) => {
		expect(isTempFileName(name)).toBe(expected)
	})
})
