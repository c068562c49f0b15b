import { describe, expect, it } from 'vitest'
import {
	parseTerminalRequest,
	scriptArgv,
	shellQuote,
} from '../../../src/agent/process/terminal-request.js'
import { refusalOf } from '../refusal-of.js'

describe('terminal request', () => {
	it.each([
		[{ cols: 80, rows: 24 }, undefined],
		[{ cols: 1, rows: 1000 }, undefined],
		[{ cols: 0, rows: 24 }, 'invalid_terminal_size'],
		[{ cols: 80, rows: 1001 }, 'invalid_terminal_size'],
		[{ cols: 80.5, rows: 24 }, 'invalid_terminal_size'],
		[{ cols: '80', rows: 24 }, 'invalid_terminal_size'],
		[{ rows: 24 }, 'invalid_terminal_size'],
		[{ cols: 80, rows: 24, args: ['a', 1] }, 'invalid_terminal_args'],
		[{ cols: 80, rows: 24, env: { A: 1 } }, 'invalid_terminal_env'],
		[{ cols: 80, rows: 24, command: '' }, 'invalid_terminal_command'],
	])('%j is refused with %s', (body, expected) => {
		expect(refusalOf(() => parseTerminalRequest(body))).toBe(expected)
	})

	it('defaults the command to /bin/sh', () => {
		expect(parseTerminalRequest({ cols: 80, rows: 24 })).toMatchObject({
			command: '/bin/sh',
			args: [],
		})
	})

	it.each([
		['plain', "'plain'"],
		["it's", "'it'\\''s'"],
		['$(rm -rf /); `x` "y"', `'$(rm -rf /); \`x\` "y"'`],
		['', "''"],
	])('quotes %j as %s', (word, quoted) => {
		expect(shellQuote(word)).toBe(quoted)
	})

	it('builds the script argv around an exec of the quoted command line', () => {
		expect(scriptArgv('/bin/echo', ['a b', "c'd"])).toEqual([
			'-qefc',
			"exec '/bin/echo' 'a b' 'c'\\''d'",
			'/dev/null',
		])
	})
})
