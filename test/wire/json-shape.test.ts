/** The bounded scan a JSON payload passes before it is parsed (pure, table-tested). */
import { describe, expect, it } from 'vitest'
import { asciiMemberBytes } from '../../src/wire/ascii-string-members.js'
import { parseFramePayload } from '../../src/wire/frame.js'
import {
	BULK_STRING_MIN_BYTES,
	JsonShapeError,
	type JsonShapeLimits,
	JsonShapeScanner,
	scanJsonShape,
} from '../../src/wire/json-shape.js'

const LOOSE: JsonShapeLimits = {
	maxDepth: 8,
	maxValues: Number.POSITIVE_INFINITY,
	maxParsedBytes: Number.POSITIVE_INFINITY,
}

/** Feeds `text` in pieces of `step` bytes and answers the verdict or the error. */
function scan(text: string | Buffer, limits: JsonShapeLimits, step = 7) {
	const bytes = typeof text === 'string' ? Buffer.from(text) : text
	const scanner = new JsonShapeScanner(limits)
	try {
		for (let at = 0; at < bytes.length; at += step) scanner.feed(bytes.subarray(at, at + step))
		return scanner.finish()
	} catch (error) {
		return error
	}
}

const BULK = 'Q'.repeat(BULK_STRING_MIN_BYTES)

describe('the depth bound', () => {
	it.each([
		['8 levels', `${'['.repeat(8)}${']'.repeat(8)}`, undefined],
		['9 levels', `${'['.repeat(9)}${']'.repeat(9)}`, 8],
		['objects count too', `{"a":{"b":${'['.repeat(7)}${']'.repeat(7)}}}`, 16],
		['brackets inside strings do not', `{"a":"${'['.repeat(100)}"}`, undefined],
		['an escaped quote does not end a string', `{"a":"\\"[[[[[[[[[[[[["}`, undefined],
		['siblings are not depth', `[${'[],'.repeat(100)}[]]`, undefined],
	])('%s', (_title, text, at) => {
		const verdict = scan(text, LOOSE)
		if (at === undefined) expect(verdict).not.toBeInstanceOf(Error)
		else expect(verdict).toMatchObject({ name: 'JsonShapeError', bound: 'depth', limit: 8, at })
	})
})

describe('the value bound', () => {
	const limits = { ...LOOSE, maxValues: 10 }
	it.each([
		['ten values', '[0,0,0,0,0,0,0,0,0,0]', false],
		['eleven', '[0,0,0,0,0,0,0,0,0,0,0]', true],
		['commas in strings do not count', `["${',,,,,,,,,,,,,,,,'}"]`, false],
		['members count', '{"a":1,"b":2,"c":3,"d":4,"e":5,"f":{}}', false],
		['nested members count', '{"a":[1,2,3],"b":[4,5,6],"c":{"d":1,"e":2}}', true],
	])('%s', (_title, text, refused) => {
		const verdict = scan(text, limits)
		if (refused) expect(verdict).toMatchObject({ bound: 'values', limit: 10 })
		else expect(verdict).not.toBeInstanceOf(Error)
	})
})

describe('the parsed-bytes bound and the bulk string', () => {
	const limits = { ...LOOSE, maxParsedBytes: 64 }

	it('exempts the one longest clean string, wherever it sits', () => {
		const text = `{"ok":true,"content":"${BULK}","sizeBytes":1}`
		const verdict = scan(text, limits, 4093)
		const start = text.indexOf(BULK)
		expect(verdict).toEqual({ bulk: { start, end: start + BULK.length } })
	})

	it.each([
		['an escape', `{"c":"${BULK}\\n"}`],
		['a byte above 0x7f', `{"c":"é${BULK}"}`],
		['a second long string', `{"a":"${BULK}","b":"${BULK}"}`],
	])('counts a long string with %s as parsed', (_title, text) => {
		expect(scan(text, limits, 65_536)).toMatchObject({ bound: 'parsed-bytes', limit: 64 })
	})

	it('refuses as soon as the parsed bytes pass the bound, before the payload ends', () => {
		const scanner = new JsonShapeScanner(limits)
		scanner.feed(Buffer.from('{"a":"\\n\\n\\n'))
		expect(() => scanner.feed(Buffer.from('\\n'.repeat(40)))).toThrow(JsonShapeError)
		expect(scanner.scanned).toBeLessThan(200)
	})

	it('reads an escape split across two chunks', () => {
		expect(scan('{"a":"x\\"]]]]]]]]]]","b":[[[[[[[[[1]]]]]]]]]}', LOOSE, 8)).toMatchObject({
			bound: 'depth',
		})
		expect(scan('{"a":"\\\\","b":1}', { ...LOOSE, maxValues: 1 }, 7)).toMatchObject({
			bound: 'values',
		})
	})

	it('gives the same verdict whatever the chunking', () => {
		const text = `{"a":[1,{"b":"x\\\\\\""}],"c":"${BULK}","d":"\\u00e9"}`
		const whole = scanJsonShape(Buffer.from(text), LOOSE)
		for (const step of [1, 2, 3, 5, 64, 4096]) expect(scan(text, LOOSE, step)).toEqual(whole)
	})
})

describe('parseFramePayload over a scan', () => {
	it.each([
		['a bulk member in the middle', { ok: true, content: BULK, sizeBytes: 3 }, ['content']],
		[
			'a bulk member two levels down',
			{ op: 'w', body: { content: BULK, n: 1 } },
			['body', 'content'],
		],
		['a bulk array item (parsed plainly)', { list: [BULK] }, undefined],
		['a bulk key (parsed plainly)', { [BULK]: 1 }, undefined],
	])('%s: the same value JSON.parse gives', (_title, message, path) => {
		const payload = Buffer.from(JSON.stringify(message))
		const parsed = parseFramePayload(payload)
		expect(parsed).toEqual(message)
		if (path) {
			const holder = path
				.slice(0, -1)
				.reduce<Record<string, unknown>>(
					(node, key) => node[key] as Record<string, unknown>,
					parsed,
				)
			expect(asciiMemberBytes(holder, path[path.length - 1] ?? '')?.length).toBe(BULK.length)
		}
	})

	it('a payload nested past 64 levels is refused even by a peer that trusts its sender', () => {
		expect(() => parseFramePayload(Buffer.from(`${'['.repeat(65)}${']'.repeat(65)}`))).toThrow(
			JsonShapeError,
		)
	})
})
