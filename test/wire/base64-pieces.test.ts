import { describe, expect, it } from 'vitest'
import {
	base64Length,
	decodeBase64,
	decodeBase64Into,
	decodedBase64Length,
	writeBase64,
} from '../../src/wire/base64-pieces.js'

const sample = (length: number) =>
	Buffer.from(Array.from({ length }, (_, i) => (i * 131 + 7) % 256))

describe('base64 through short strings', () => {
	it.each([0, 1, 2, 3, 4, 49_151, 49_152, 49_153, 200_000, 1_000_001])(
		'encodes and decodes %i bytes exactly as Buffer does',
		(length) => {
			const bytes = sample(length)
			const expected = bytes.toString('base64')
			const target = Buffer.alloc(base64Length(length))
			expect(writeBase64(target, 0, bytes)).toBe(expected.length)
			expect(target.toString('latin1')).toBe(expected)
			expect(decodedBase64Length(target)).toBe(length)
			expect(decodeBase64(target).equals(bytes)).toBe(true)
			const into = Buffer.alloc(length + 5)
			expect(decodeBase64Into(into, 5, target)).toBe(length)
			expect(into.subarray(5).equals(bytes)).toBe(true)
		},
	)
})
