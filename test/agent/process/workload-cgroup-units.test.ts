import { spawnSync } from 'node:child_process'
import { closeSync, existsSync, mkdtempSync, openSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { AgentConfigError } from '../../../src/agent/handler/config-error.js'
import { sessionsOfPids } from '../../../src/agent/lifecycle/quiesce-plan.js'
import {
	commandGroupName,
	commandGroupNumber,
	parseFreezerState,
	parsePopulated,
	parseProcsList,
} from '../../../src/agent/process/cgroup-files.js'
import { lookupExecutable, type ProbeResult } from '../../../src/agent/process/executable-lookup.js'
import { parseWorkloadCgroups } from '../../../src/agent/process/workload-cgroup-config.js'
import { joinScript, joinShellEnvironment } from '../../../src/agent/process/workload-spawn.js'

describe('parseWorkloadCgroups', () => {
	it.each([
		[undefined, []],
		['', []],
		['  ', []],
		['[]', []],
		[
			'[{"fd":4,"version":1,"perCommand":false},{"fd":5,"version":1,"perCommand":true}]',
			[
				{ fd: 4, version: 1, perCommand: false },
				{ fd: 5, version: 1, perCommand: true },
			],
		],
		['[{"fd":4,"version":2,"perCommand":true}]', [{ fd: 4, version: 2, perCommand: true }]],
	])('reads %j', (raw, expected) => {
		expect(parseWorkloadCgroups(raw)).toEqual(expected)
	})

	it.each([
		['{', /must be a JSON array/],
		['{"fd":4}', /must be a JSON array/],
		['[4]', /entry 0 must be an object/],
		[
			'[{"fd":"4","version":1,"perCommand":true}]',
			/entry 0: fd must be a safe integer ≥ 3, got "4"/,
		],
		['[{"fd":1,"version":1,"perCommand":true}]', /fd must be a safe integer ≥ 3, got 1/],
		['[{"fd":4.5,"version":1,"perCommand":true}]', /fd must be a safe integer ≥ 3, got 4.5/],
		['[{"fd":4,"version":"1","perCommand":true}]', /version must be 1 or 2, got "1"/],
		['[{"fd":4,"version":1}]', /perCommand must be a boolean, got undefined/],
		[
			'[{"fd":4,"version":1,"perCommand":false},{"fd":4,"version":1,"perCommand":true}]',
			/the same fd twice/,
		],
		[
			'[{"fd":4,"version":1,"perCommand":true},{"fd":5,"version":2,"perCommand":true}]',
			/more than one perCommand group/,
		],
		[
			JSON.stringify(
				Array.from({ length: 17 }, (_, i) => ({ fd: 3 + i, version: 1, perCommand: false })),
			),
			/at most 16/,
		],
	])('refuses %s naming the variable', (raw, message) => {
		const error = (() => {
			try {
				parseWorkloadCgroups(raw)
			} catch (caught) {
				return caught
			}
			return undefined
		})()
		expect(error).toBeInstanceOf(AgentConfigError)
		expect((error as AgentConfigError).variable).toBe('NAMZU_AGENT_WORKLOAD_CGROUPS')
		expect(String((error as Error).message)).toMatch(/^NAMZU_AGENT_WORKLOAD_CGROUPS /)
		expect(String((error as Error).message)).toMatch(message)
	})
})

/** Prints its argv, and which of descriptors 3 and 4 it still has. */
const PROGRAM =
	'printf "%s|" "$0" "$@"; for fd in 3 4; do [ -e /proc/$$/fd/$fd ] && printf "open %s" $fd; done; true'

describe('joinScript', () => {
	it.each([
		[1, '{ echo $$ >&3; } 2>&4 || exit 125; exec "$@" 3>&- 4>&-'],
		[2, '{ echo $$ >&3 && echo $$ >&4; } 2>&5 || exit 125; exec "$@" 3>&- 4>&- 5>&-'],
	])('for %i group(s)', (count, script) => {
		expect(joinScript(count)).toBe(script)
	})

	it('runs the program under its own argv with every join descriptor closed, and stops on a failed join', () => {
		const run = (procsTarget: string) => {
			const procs = openSync(procsTarget, 'w')
			const status = openSync('/dev/null', 'w')
			try {
				return spawnSync('/bin/sh', ['-c', joinScript(1), 'sh', 'sh', '-c', PROGRAM, 'sh', 'a b'], {
					encoding: 'utf8',
					stdio: ['ignore', 'pipe', 'pipe', procs, status],
				})
			} finally {
				closeSync(procs)
				closeSync(status)
			}
		}
		const ran = run('/dev/null')
		expect(ran.status).toBe(0)
		expect(ran.stdout, 'argv as given, descriptors 3 and 4 closed').toBe('sh|a b|')
		const failed = run('/dev/full')
		expect(failed.status).toBe(125)
		expect(failed.stdout).toBe('')
	})
})

describe('joinShellEnvironment', () => {
	it('drops what a shell acts on at startup and keeps everything else', () => {
		expect(
			joinShellEnvironment({
				PATH: '/usr/bin',
				HOME: '/w',
				'BASH_FUNC_echo%%': '() { builtin echo pwned; }',
				BASH_FUNC_x: 'y',
				SHELLOPTS: 'xtrace',
				BASHOPTS: 'extdebug',
				PS4: '$(id)',
				BASH_ENV: '/w/rc',
				ENV: '/w/rc',
				BASH_XTRACEFD: '2',
				MY_ENV: 'kept',
			}),
		).toEqual({ PATH: '/usr/bin', HOME: '/w', BASH_XTRACEFD: '2', MY_ENV: 'kept' })
	})

	it.skipIf(!existsSync('/bin/bash'))(
		'keeps a bash behind /bin/sh from running a caller’s function or trace before the join',
		() => {
			const proof = join(mkdtempSync(join(tmpdir(), 'namzu-join-env-')), 'ran-before-join')
			const hostile = {
				PATH: process.env.PATH ?? '/usr/bin:/bin',
				'BASH_FUNC_echo%%': `() { : > ${proof}; }`,
				SHELLOPTS: 'xtrace',
			}
			const run = (env: Record<string, string>) => {
				const procs = openSync('/dev/null', 'w')
				const status = openSync('/dev/null', 'w')
				try {
					return spawnSync('/bin/bash', ['-c', joinScript(1), 'sh', 'true'], {
						argv0: 'sh',
						env,
						encoding: 'utf8',
						stdio: ['ignore', 'pipe', 'pipe', procs, status],
					})
				} finally {
					closeSync(procs)
					closeSync(status)
				}
			}
			try {
				// The attack is real against the raw environment…
				const attacked = run(hostile)
				expect(existsSync(proof), 'the imported function ran').toBe(true)
				expect(attacked.stderr, 'the imported options applied').toContain('+ exec true')
				rmSync(proof)
				// …and gone once the join shell gets the sanitized one.
				const sanitized = run(joinShellEnvironment(hostile))
				expect(sanitized.status).toBe(0)
				expect(existsSync(proof), 'the imported function ran').toBe(false)
				expect(sanitized.stdout + sanitized.stderr).toBe('')
			} finally {
				rmSync(dirname(proof), { recursive: true, force: true })
			}
		},
	)
})

describe('lookupExecutable', () => {
	const files: Record<string, ProbeResult> = {
		'/usr/bin/tool': 'executable',
		'/opt/bin/tool': 'executable',
		'/usr/bin/data': 'not-executable',
		'/work/run.sh': 'executable',
		'/work/bin/local': 'executable',
		'/work/notes': 'not-executable',
	}
	const probe = (path: string): ProbeResult => files[path] ?? 'missing'

	it.each([
		['tool', '/usr/bin:/opt/bin', { found: '/usr/bin/tool' }],
		['tool', '/opt/bin:/usr/bin', { found: '/opt/bin/tool' }],
		['tool', undefined, { found: '/usr/bin/tool' }],
		['missing', '/usr/bin', { code: 'ENOENT' }],
		['data', '/usr/bin', { code: 'EACCES' }],
		['run.sh', ':/usr/bin', { found: '/work/run.sh' }],
		['local', 'bin', { found: '/work/bin/local' }],
		['./run.sh', '/usr/bin', { found: '/work/run.sh' }],
		['bin/local', '', { found: '/work/bin/local' }],
		['/usr/bin/tool', '/nowhere', { found: '/usr/bin/tool' }],
		['/work/notes', '/usr/bin', { code: 'EACCES' }],
		['/no/such', '/usr/bin', { code: 'ENOENT' }],
		['', '/usr/bin', { code: 'ENOENT' }],
	])('%s on PATH %j', (command, path, expected) => {
		expect(lookupExecutable(command, path, '/work', probe)).toEqual(expected)
	})
})

describe('cgroup files', () => {
	it.each([
		['', []],
		['12\n345\n', [12, 345]],
		['12\n\n 7 \nx\n0\n', [12, 7]],
	])('parseProcsList(%j)', (text, pids) => {
		expect(parseProcsList(text)).toEqual(pids)
	})

	it.each([
		['populated 0\nfrozen 0\n', false],
		['populated 1\nfrozen 0\n', true],
		['frozen 0\n', undefined],
		['populated 2\n', undefined],
	])('parsePopulated(%j)', (text, populated) => {
		expect(parsePopulated(text)).toBe(populated)
	})

	it.each([
		['THAWED\n', 'THAWED'],
		['FREEZING\n', 'FREEZING'],
		['FROZEN', 'FROZEN'],
		['frozen', undefined],
	])('parseFreezerState(%j)', (text, state) => {
		expect(parseFreezerState(text)).toBe(state)
	})

	it.each([
		['c-1', 1],
		['c-42', 42],
		['c-0', undefined],
		['c-01', undefined],
		['c-', undefined],
		['work', undefined],
		['c-1x', undefined],
	])('commandGroupNumber(%j)', (name, n) => {
		expect(commandGroupNumber(name)).toBe(n)
	})

	it('names groups c-<n>', () => {
		expect(commandGroupName(7)).toBe('c-7')
		expect(commandGroupNumber(commandGroupName(123))).toBe(123)
	})
})

describe('sessionsOfPids', () => {
	const entry = (pid: number, session: number) => ({
		pid,
		ppid: 1,
		session,
		state: 'S',
		uid: 0,
		command: 'sleep',
	})
	it('answers the sessions of the pids the snapshot shows, ignoring pids it does not', () => {
		const snapshot = [entry(10, 10), entry(11, 10), entry(20, 20), entry(30, 30)]
		expect([...sessionsOfPids(snapshot, [11, 20, 99])].sort()).toEqual([10, 20])
		expect([...sessionsOfPids(snapshot, [])]).toEqual([])
	})
})
