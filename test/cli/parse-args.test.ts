import { describe, expect, it } from 'vitest'
import { CliUsageError, parseCliArgs } from '../../src/cli/parse-args.js'

describe('parseCliArgs', () => {
	const cases: Array<[string, string[], unknown]> = [
		['no verb means help', [], { kind: 'help' }],
		[
			'run takes the command after --',
			['run', '--', 'sh', '-c', 'exit 3'],
			{
				kind: 'run',
				allowNetwork: false,
				isolation: 'bubblewrap',
				command: 'sh',
				args: ['-c', 'exit 3'],
			},
		],
		[
			'run options come before --',
			['run', '--allow-network', '--workspace', '/w', '--timeout-ms', '500', '--', 'ls', '-la'],
			{
				kind: 'run',
				allowNetwork: true,
				isolation: 'bubblewrap',
				workspace: '/w',
				timeoutMs: 500,
				command: 'ls',
				args: ['-la'],
			},
		],
		[
			'flags after -- belong to the command',
			['run', '--', 'node', '--allow-network'],
			{
				kind: 'run',
				allowNetwork: false,
				isolation: 'bubblewrap',
				command: 'node',
				args: ['--allow-network'],
			},
		],
		[
			'run without -- takes the first positional as the command',
			['run', 'echo', 'hi'],
			{ kind: 'run', allowNetwork: false, isolation: 'bubblewrap', command: 'echo', args: ['hi'] },
		],
		[
			'shell',
			['shell', '--no-isolation'],
			{ kind: 'shell', allowNetwork: false, isolation: 'none' },
		],
		['doctor --json', ['doctor', '--json'], { kind: 'doctor', json: true }],
	]
	for (const [title, argv, expected] of cases) {
		it(title, () => {
			expect(parseCliArgs(argv)).toEqual(expected)
		})
	}

	const refusals: Array<[string, string[]]> = [
		['an unknown verb', ['launch']],
		['run with no command', ['run', '--']],
		['an unknown option', ['run', '--fast', '--', 'true']],
		['a non-numeric timeout', ['run', '--timeout-ms', 'soon', '--', 'true']],
		['a workspace flag without a directory', ['shell', '--workspace']],
		['a command given to shell', ['shell', '--', 'ls']],
	]
	for (const [title, argv] of refusals) {
		it(`refuses ${title} with CliUsageError`, () => {
			expect(() => parseCliArgs(argv)).toThrow(CliUsageError)
		})
	}
})
