import { describe, expect, it } from 'vitest'
import {
	KubernetesWatchFramingError,
	MAX_WATCH_EVENT_BYTES,
	parseWatchEvent,
	WatchLineSplitter,
} from '../../../../src/backends/kubernetes/api/watch-events.js'

const event = (type: string, name = 'c') => JSON.stringify({ type, object: { metadata: { name } } })

describe('watch framing', () => {
	it.each([['ADDED'], ['MODIFIED'], ['DELETED'], ['BOOKMARK'], ['ERROR']])(
		'parses a %s event with its object',
		(type) => {
			expect(parseWatchEvent(event(type))).toEqual({ type, object: { metadata: { name: 'c' } } })
		},
	)

	it.each([
		['not JSON', '{"type":', 'not-json'],
		['an unknown type', JSON.stringify({ type: 'SYNC', object: {} }), 'not-an-event'],
		['no object', JSON.stringify({ type: 'ADDED' }), 'not-an-event'],
		['an object that is an array', JSON.stringify({ type: 'ADDED', object: [] }), 'not-an-event'],
		['a bare string', JSON.stringify('ADDED'), 'not-an-event'],
	])('refuses %s', (_what, line, problem) => {
		let error: unknown
		try {
			parseWatchEvent(line)
		} catch (caught) {
			error = caught
		}
		expect(error).toBeInstanceOf(KubernetesWatchFramingError)
		expect(error).toMatchObject({ problem })
	})

	it.each([
		['one chunk, two lines', ['a\nb\n'], ['a', 'b'], undefined],
		['a line split across chunks', ['ab', 'c\nd'], ['abc'], 'd'],
		['blank lines skipped', ['\n\na\n\n'], ['a'], undefined],
		['a newline alone ends the pending line', ['xy', '\n'], ['xy'], undefined],
		[
			'a multi-byte character split across chunks',
			[Buffer.from('é\n').subarray(0, 1), Buffer.from('é\n').subarray(1)],
			['é'],
			undefined,
		],
	])('splits lines: %s', (_what, chunks, lines, rest) => {
		const splitter = new WatchLineSplitter()
		const seen = chunks.flatMap((chunk) =>
			splitter.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk),
		)
		expect(seen).toEqual(lines)
		expect(splitter.end()).toBe(rest)
	})

	it('refuses a line longer than the bound without holding more than it, across chunks', () => {
		const splitter = new WatchLineSplitter(8)
		expect(splitter.push(Buffer.from('12345'))).toEqual([])
		expect(() => splitter.push(Buffer.from('6789'))).toThrow(KubernetesWatchFramingError)
		expect(MAX_WATCH_EVENT_BYTES).toBe(1024 * 1024)
	})

	it('accepts a line of exactly the bound', () => {
		const splitter = new WatchLineSplitter(4)
		expect(splitter.push(Buffer.from('1234\n'))).toEqual(['1234'])
	})
})
