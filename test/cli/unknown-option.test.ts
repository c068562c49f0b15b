/**
 * An unknown option names itself and, when it looks like a flag the verb takes (an API-shaped
 * spelling, another tool's name, a typo), that flag; an unknown command likewise names the command
 * it looks like and points at the general help; and `fork` takes run's sandbox flags for every
 * fork, refusing by name what a fork cannot have. Pure parsing: no sandbox.
 */
import { describe, expect, it } from 'vitest'
import { CliUsageError } from '../../src/cli/cli-errors.js'
import { errorLine } from '../../src/cli/cli-report.js'
import { parseCliArgs, VERBS } from '../../src/cli/parse-args.js'
import { SANDBOX_FLAG_NAMES } from '../../src/cli/sandbox-flags.js'
import { suggestCommand, unknownCommand } from '../../src/cli/unknown-command.js'
import { suggestFlag, unknownOption } from '../../src/cli/unknown-option.js'

const RUN_FLAGS = [
	'--timeout-ms',
	'--detach',
	'--no-stdin',
	'--keep-alive-ms',
	...SANDBOX_FLAG_NAMES,
]
const CHECKPOINT = '0123456789abcdef'

function usageError(argv: readonly string[]): string {
	try {
		parseCliArgs(argv)
	} catch (error) {
		expect(error).toBeInstanceOf(CliUsageError)
		return (error as Error).message
	}
	throw new Error(`${JSON.stringify(argv)} parsed`)
}

describe('suggestFlag', () => {
	it.each([
		['--disk-limit-mb', '--disk'],
		['--diskLimitMb', '--disk'],
		['--disk-limit-mb=64', '--disk'],
		['--memory-limit-mb', '--memory'],
		['--memory-mb', '--memory'],
		['--memoryLimitMb', '--memory'],
		['--cpu', '--cpus'],
		['--cpuLimit', '--cpus'],
		['--pids-limit', '--pids'],
		['--maxProcesses', '--pids'],
		['--network', '--allow-network'],
		['--allow-all', '--allow-network'],
		['--allow-hosts', '--allow-host'],
		['--timeout', '--timeout-ms'],
		['--tiemout-ms', '--timeout-ms'],
		['--detatch', '--detach'],
		['--disk=64', '--disk'],
		['--working-directory', '--workspace'],
	])('%s → %s', (arg, flag) => {
		expect(suggestFlag(arg, RUN_FLAGS)).toBe(flag)
	})

	it.each([['--bogus'], ['--fast'], ['-x'], ['--no'], ['--privileged']])('%s: no hint', (arg) => {
		expect(suggestFlag(arg, RUN_FLAGS)).toBeUndefined()
	})

	it('hints only flags the verb takes', () => {
		expect(suggestFlag('--network', ['--dry-run'])).toBeUndefined()
		expect(suggestFlag('--disk-limit-mb', ['--json'])).toBeUndefined()
		expect(suggestFlag('--dryrun', ['--dry-run'])).toBe('--dry-run')
	})

	it('says the flag in the message, or nothing more', () => {
		expect(unknownOption('run', '--disk-limit-mb', RUN_FLAGS).message).toBe(
			'unknown option for run: --disk-limit-mb (did you mean --disk?)',
		)
		expect(unknownOption('run', '--bogus', RUN_FLAGS).message).toBe(
			'unknown option for run: --bogus',
		)
	})
})

describe('every verb hints its own flags', () => {
	it.each([
		[['run', '--disk-limit-mb', '64', '--', 'true'], 'run: --disk-limit-mb (did you mean --disk?)'],
		[['shell', '--memory-mb', '64'], 'shell: --memory-mb (did you mean --memory?)'],
		[['run', '--persistent', '--', 'true'], 'run: --persistent'],
		[['mcp', '--pids-limit', '5'], 'mcp: --pids-limit (did you mean --pids?)'],
		[['mcp', '--namespaces', 'a'], 'mcp: --namespaces (did you mean --namespace?)'],
		[['doctor', '--jsn'], 'doctor: --jsn (did you mean --json?)'],
		[['gc', '--dryrun'], 'gc: --dryrun (did you mean --dry-run?)'],
		[['logs', '--folow', 'x'], 'logs: --folow (did you mean --follow?)'],
		[
			['exec', '--workdr', 'd', 'aaaaaaaaaaaa', '--', 'true'],
			'exec: --workdr (did you mean --workdir?)',
		],
		[['kill', '--signl', 'TERM', 'x'], 'kill: --signl (did you mean --signal?)'],
		[['port', '--noauth', 'aaaaaaaaaaaa', '80'], 'port: --noauth (did you mean --no-auth?)'],
		[['image', 'build', '--rootfsonly'], 'image build: --rootfsonly (did you mean --rootfs-only?)'],
		[['checkpoint', '--lable', 'x', 'aaaaaaaaaaaa'], 'checkpoint: --lable (did you mean --label?)'],
		[['checkpoints', '--jsn'], 'checkpoints: --jsn (did you mean --json?)'],
		[['fork', '--cpu', '1', CHECKPOINT], 'fork: --cpu (did you mean --cpus?)'],
		[['fork', '--counts', '2', CHECKPOINT], 'fork: --counts (did you mean --count?)'],
		[['fork', '--timeout-ms', '5', CHECKPOINT], 'fork: --timeout-ms'],
	])('%j', (argv, message) => {
		expect(usageError(argv)).toBe(`unknown option for ${message}`)
	})
})

describe('fork takes the sandbox flags', () => {
	it('no flags: the defaults (what fork is given, not the parent)', () => {
		expect(parseCliArgs(['fork', CHECKPOINT])).toEqual({
			kind: 'fork',
			checkpointId: CHECKPOINT,
			count: 1,
			sandbox: { allowNetwork: false, isolation: 'bubblewrap' },
		})
	})

	it('limits, egress and environment, before or after the CHECKPOINT', () => {
		expect(
			parseCliArgs([
				'fork',
				'--count',
				'2',
				'--disk',
				'64',
				'--memory',
				'256',
				CHECKPOINT,
				'--cpus',
				'0.5',
				'--pids',
				'100',
				'--env',
				'A=1',
				'--allow-host',
				'example.org',
				'--keep-alive-ms',
				'60000',
			]),
		).toEqual({
			kind: 'fork',
			checkpointId: CHECKPOINT,
			count: 2,
			keepAliveMs: 60_000,
			sandbox: {
				allowNetwork: false,
				isolation: 'bubblewrap',
				diskLimitMb: 64,
				memoryLimitMb: 256,
				cpuLimit: 0.5,
				maxProcesses: 100,
				env: { A: '1' },
				allowHosts: ['example.org'],
			},
		})
		expect(parseCliArgs(['fork', '--allow-network', '-n', '3', CHECKPOINT])).toMatchObject({
			count: 3,
			sandbox: { allowNetwork: true },
		})
	})

	it.each([
		[['fork', '--workspace', '/tmp/w', CHECKPOINT], '--workspace: a fork gets a fresh copy'],
		[['fork', '--tier', 'container', '--image', '/i', CHECKPOINT], 'no --tier container'],
		[['fork', '--image', '/i', CHECKPOINT], '--image applies only to --tier container'],
		[['fork', '--disk', '1', CHECKPOINT], '--disk needs an integer in 16..'],
		[['fork', '--memory', 'lots', CHECKPOINT], '--memory needs'],
		[['fork', '--allow-network', '--allow-host', 'a.org', CHECKPOINT], 'excludes --allow-host'],
		[['fork', CHECKPOINT, '--disk'], '--disk needs a value'],
	])('%j is refused by name', (argv, named) => {
		expect(usageError(argv)).toContain(named)
	})
})

describe('an unknown command', () => {
	it.each([
		['ls', 'sessions'],
		['ps', 'sessions'],
		['rm', 'destroy'],
		['stop', 'destroy'],
		['create', 'run --detach'],
		['snapshot', 'checkpoint'],
		['restore', 'rollback'],
		['clone', 'fork'],
		['copy', 'cp'],
		['exce', 'exec'],
		['docter', 'doctor'],
		['checkpiont', 'checkpoint'],
		['Run', 'run'],
	])('%s → %s', (word, command) => {
		expect(suggestCommand(word, VERBS)).toBe(command)
		expect(usageError([word])).toBe(`unknown command: ${word} (did you mean ${command}?)`)
	})

	it.each([['bogus'], ['x'], ['--bogus'], ['deploy']])('%s: no hint', (word) => {
		expect(suggestCommand(word, VERBS)).toBeUndefined()
		expect(usageError([word])).toBe(`unknown command: ${word}`)
	})

	it('points at the general help, not at a command that does not exist', () => {
		const line = errorLine(unknownCommand('ls', VERBS), 'ls')
		expect(line).toBe(
			'namzu-sandbox: unknown command: ls (did you mean sessions?)\nsee: namzu-sandbox --help',
		)
		expect(errorLine(unknownOption('run', '--bogus', RUN_FLAGS), 'run')).toContain(
			'see: namzu-sandbox run --help',
		)
	})
})
