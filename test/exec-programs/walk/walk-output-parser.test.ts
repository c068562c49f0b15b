import { describe, expect, it } from 'vitest'
import { FileWalkProtocolError } from '../../../src/exec-programs/walk/walk-errors.js'
import { WalkOutputParser } from '../../../src/exec-programs/walk/walk-output-parser.js'

const line = (value: unknown) => `${JSON.stringify(value)}\n`

describe('WalkOutputParser', () => {
	it('assembles records from arbitrary chunk boundaries', () => {
		const parser = new WalkOutputParser('/w', 10)
		const text = line({ type: 'entry', path: '/w/a', size: 1 }) + line({ type: 'done' })
		const records = [...text].flatMap((char) => parser.push(char))
		expect(records).toEqual([{ type: 'entry', entry: { path: '/w/a', size: 1 } }, { type: 'done' }])
		expect(parser.ended).toBe(true)
		expect(() => parser.finish()).not.toThrow()
	})

	it('reports a guest error record with its code', () => {
		const parser = new WalkOutputParser('/w', 10)
		expect(parser.push(line({ type: 'error', message: 'x', code: 'ERR_FILE_WALK_LIMIT' }))).toEqual(
			[{ type: 'error', message: 'x', code: 'ERR_FILE_WALK_LIMIT' }],
		)
	})

	it('accepts the root itself (a regular-file root) and anything below the root /', () => {
		expect(
			new WalkOutputParser('/w/f.txt', 1).push(line({ type: 'entry', path: '/w/f.txt', size: 0 })),
		).toHaveLength(1)
		expect(
			new WalkOutputParser('/', 1).push(line({ type: 'entry', path: '/etc/x', size: 0 })),
		).toHaveLength(1)
	})

	const violations: ReadonlyArray<readonly [string, string, string]> = [
		['a line that is not JSON', 'nope\n', 'invalid-record'],
		['a JSON array', '[1]\n', 'invalid-record'],
		['an unknown record type', line({ type: 'dir', path: '/w/a' }), 'invalid-record'],
		['a relative path', line({ type: 'entry', path: 'a', size: 1 }), 'invalid-record'],
		[
			'a path outside the root',
			line({ type: 'entry', path: '/etc/passwd', size: 1 }),
			'path-outside-root',
		],
		[
			'a sibling sharing the root prefix',
			line({ type: 'entry', path: '/wx/a', size: 1 }),
			'path-outside-root',
		],
		[
			'a path escaping with ..',
			line({ type: 'entry', path: '/w/../etc/passwd', size: 1 }),
			'path-outside-root',
		],
		['a negative size', line({ type: 'entry', path: '/w/a', size: -1 }), 'invalid-size'],
		['a fractional size', line({ type: 'entry', path: '/w/a', size: 1.5 }), 'invalid-size'],
		['a string size', line({ type: 'entry', path: '/w/a', size: '1' }), 'invalid-size'],
		['a record after done', line({ type: 'done' }) + line({ type: 'done' }), 'record-after-end'],
		['a line over 65 536 characters', `${'x'.repeat(65_537)}`, 'line-too-long'],
		[
			'more entries than maxEntries',
			line({ type: 'entry', path: '/w/a', size: 1 }) +
				line({ type: 'entry', path: '/w/b', size: 1 }),
			'too-many-entries',
		],
	]
	it.each(violations)('rejects %s', (_, text, violation) => {
		const parser = new WalkOutputParser('/w', 1)
		let caught: unknown
		try {
			parser.push(text)
		} catch (error) {
			caught = error
		}
		expect(caught).toBeInstanceOf(FileWalkProtocolError)
		expect((caught as FileWalkProtocolError).violation).toBe(violation)
	})

	it('treats a trailing partial line as truncated output', () => {
		const parser = new WalkOutputParser('/w', 1)
		parser.push('{"type":"do')
		expect(() => parser.finish()).toThrow(FileWalkProtocolError)
	})
})
