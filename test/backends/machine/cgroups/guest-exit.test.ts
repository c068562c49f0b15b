/** How a local agent ended, from its launcher's exit and the OOM counter (pure, table-driven). */
import { describe, expect, it } from 'vitest'
import {
	guestExitOf,
	parseOomKillCount,
} from '../../../../src/backends/machine/cgroups/guest-exit.js'

describe('parseOomKillCount', () => {
	it.each([
		['v1 memory.oom_control', 'oom_kill_disable 0\nunder_oom 0\noom_kill 3\n', 3],
		['v2 memory.events', 'low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n', 1],
		['no counter (an old kernel)', 'oom_kill_disable 0\nunder_oom 0\n', undefined],
		['not oom_group_kill', 'oom_group_kill 4\n', undefined],
		['empty', '', undefined],
	])('%s', (_, text, expected) => {
		expect(parseOomKillCount(text)).toBe(expected)
	})
})

describe('guestExitOf', () => {
	const base = { sandboxId: 'abc', oomKillsAtStart: 0, oomKillsAtExit: 0 }
	it.each([
		[
			'bwrap reports SIGKILL as 137',
			{ ...base, confined: true, exit: { code: 137, signal: null } },
			{ sandboxId: 'abc', exitCode: null, signal: 'SIGKILL', oomKilled: false },
		],
		[
			'the OOM killer: SIGKILL and the counter rose',
			{ ...base, oomKillsAtExit: 1, confined: true, exit: { code: 137, signal: null } },
			{ sandboxId: 'abc', exitCode: null, signal: 'SIGKILL', oomKilled: true },
		],
		[
			'a rise beside another signal is not the OOM killer',
			{ ...base, oomKillsAtExit: 1, confined: true, exit: { code: 143, signal: null } },
			{ sandboxId: 'abc', exitCode: null, signal: 'SIGTERM', oomKilled: false },
		],
		[
			'an agent that exits by itself keeps its code',
			{ ...base, confined: true, exit: { code: 0, signal: null } },
			{ sandboxId: 'abc', exitCode: 0, signal: null, oomKilled: false },
		],
		[
			'without bubblewrap 137 is an exit code (the signal arrives as a signal)',
			{ ...base, confined: false, exit: { code: 137, signal: null } },
			{ sandboxId: 'abc', exitCode: 137, signal: null, oomKilled: false },
		],
		[
			'without bubblewrap the signal is the child’s own',
			{ ...base, confined: false, exit: { code: null, signal: 'SIGKILL' as const } },
			{ sandboxId: 'abc', exitCode: null, signal: 'SIGKILL', oomKilled: false },
		],
		[
			'no memory group: oomKilled is unknown',
			{
				sandboxId: 'abc',
				oomKillsAtStart: undefined,
				oomKillsAtExit: undefined,
				confined: true,
				exit: { code: 137, signal: null },
			},
			{ sandboxId: 'abc', exitCode: null, signal: 'SIGKILL' },
		],
		[
			'a code past any signal stays a code',
			{ ...base, confined: true, exit: { code: 255, signal: null } },
			{ sandboxId: 'abc', exitCode: 255, signal: null, oomKilled: false },
		],
	])('%s', (_, facts, expected) => {
		expect(guestExitOf(facts)).toStrictEqual(expected)
	})
})
