import { describe, expect, it } from 'vitest'
import {
	advanceBody,
	type BodyFraming,
	bodyFramingOf,
} from '../../../src/host/egress/request-body-framing.js'
import { type RequestHead, readRequestHead } from '../../../src/host/egress/request-head.js'

function head(fields: string[]): RequestHead {
	const read = readRequestHead(
		Buffer.from(`POST / HTTP/1.1\r\nHost: a.test\r\n${fields.map((f) => `${f}\r\n`).join('')}\r\n`),
		8192,
	)
	if (read.kind !== 'head') throw new Error('test head did not parse')
	return read.head
}

/** Feeds `pieces` one after another; the body bytes consumed in total, or the refusal. */
function run(fields: string[], pieces: string[]): { consumed: number; done: boolean } | string {
	const read = bodyFramingOf(head(fields))
	if (read.kind === 'invalid') return read.reason
	let framing: BodyFraming = read.framing
	let consumed = 0
	for (const piece of pieces) {
		const advance = advanceBody(framing, Buffer.from(piece, 'latin1'))
		if (advance.kind === 'invalid') return advance.reason
		framing = advance.framing
		consumed += advance.consumed
		if (framing.kind === 'done') break
	}
	return { consumed, done: framing.kind === 'done' }
}

describe('request body framing', () => {
	it.each<[string, string[], string[], { consumed: number; done: boolean }]>([
		['no length field: no body', [], ['GET /next'], { consumed: 0, done: true }],
		['Content-Length: 0', ['Content-Length: 0'], ['x'], { consumed: 0, done: true }],
		[
			'Content-Length in one piece',
			['Content-Length: 5'],
			['helloGET'],
			{ consumed: 5, done: true },
		],
		[
			'Content-Length across pieces',
			['Content-Length: 5'],
			['he', 'llo!'],
			{ consumed: 5, done: true },
		],
		[
			'Content-Length not yet complete',
			['Content-Length: 5'],
			['hel'],
			{ consumed: 3, done: false },
		],
		[
			'repeated equal Content-Length',
			['Content-Length: 2', 'Content-Length: 2'],
			['ab'],
			{ consumed: 2, done: true },
		],
		[
			'chunked in one piece',
			['Transfer-Encoding: chunked'],
			['5\r\nhello\r\n0\r\n\r\nGET'],
			{ consumed: 15, done: true },
		],
		[
			'chunked byte by byte',
			['Transfer-Encoding: chunked'],
			[...'3\r\nabc\r\n0\r\n\r\n'],
			{ consumed: 13, done: true },
		],
		[
			'chunked with an extension and a trailer',
			['Transfer-Encoding: Chunked'],
			['a;x=1\r\n0123456789\r\n0\r\nT: v\r\n\r\nZ'],
			{ consumed: 30, done: true },
		],
		[
			'chunked, last chunk not yet seen',
			['Transfer-Encoding: chunked'],
			['5\r\nhel'],
			{ consumed: 6, done: false },
		],
	])('%s', (_case, fields, pieces, expected) => {
		expect(run(fields, pieces)).toEqual(expected)
	})

	it.each<[string, string[], string[], string]>([
		[
			'both fields',
			['Content-Length: 3', 'Transfer-Encoding: chunked'],
			[],
			'both Content-Length and Transfer-Encoding',
		],
		[
			'a coding other than chunked',
			['Transfer-Encoding: gzip, chunked'],
			[],
			'a transfer coding other than chunked',
		],
		[
			'differing lengths',
			['Content-Length: 2', 'Content-Length: 3'],
			[],
			'a malformed Content-Length',
		],
		['a signed length', ['Content-Length: +3'], [], 'a malformed Content-Length'],
		[
			'a chunk size that is not hex',
			['Transfer-Encoding: chunked'],
			['zz\r\n'],
			'a malformed chunk-size line',
		],
		[
			'chunk data longer than its size',
			['Transfer-Encoding: chunked'],
			['2\r\nabc\r\n'],
			'chunk data longer than its size',
		],
		['a bare LF', ['Transfer-Encoding: chunked'], ['2\nab'], 'a bare LF in the chunked framing'],
		[
			'an endless chunk-size line',
			['Transfer-Encoding: chunked'],
			['1'.repeat(2000)],
			'a chunk-size or trailer line too long',
		],
		[
			'endless trailers',
			['Transfer-Encoding: chunked'],
			['0\r\n', ...Array(1000).fill('T: 0123456789\r\n')],
			'trailer fields too long',
		],
	])('refuses %s', (_case, fields, pieces, reason) => {
		expect(run(fields, pieces)).toBe(reason)
	})
})
