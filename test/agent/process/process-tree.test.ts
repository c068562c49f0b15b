import { spawn } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import {
	childrenOf,
	decodeTtyNr,
	parseChildrenList,
	parseProcStat,
	pidsInSession,
	ptySlaveFromLink,
	readAllProcStats,
	readChildren,
	readProcStat,
} from '../../../src/agent/process/process-tree.js'

describe('parseProcStat', () => {
	it('counts fields from the last parenthesis so a comm with spaces and parens parses', () => {
		const stat = parseProcStat('4242 (we ir) d) S 1 4242 4242 34816 4242 4194304 0 0')
		expect(stat).toEqual({
			pid: 4242,
			comm: 'we ir) d',
			state: 'S',
			ppid: 1,
			pgrp: 4242,
			session: 4242,
			ttyNr: 34816,
		})
	})

	it.each(['', 'garbage', '12 (x)', '12 (x) S a b c d'])('rejects %j', (text) => {
		expect(parseProcStat(text)).toBeUndefined()
	})

	it('reads this process from /proc', () => {
		expect(readProcStat(process.pid)?.pid).toBe(process.pid)
	})
})

describe('small /proc parsers', () => {
	it('decodes tty_nr into the PTY slave major and minor', () => {
		expect(decodeTtyNr(34816)).toEqual({ major: 136, minor: 0 })
		expect(decodeTtyNr(34819)).toEqual({ major: 136, minor: 3 })
		// Minor 256 spills into the high bits.
		expect(decodeTtyNr((136 << 8) | (1 << 20))).toEqual({ major: 136, minor: 256 })
	})

	it('parses a children list', () => {
		expect(parseChildrenList('12 34 \n')).toEqual([12, 34])
		expect(parseChildrenList('')).toEqual([])
	})

	it('accepts only /dev/pts/N links as a PTY slave', () => {
		expect(ptySlaveFromLink('/dev/pts/7')).toBe('/dev/pts/7')
		expect(ptySlaveFromLink('pipe:[123]')).toBeUndefined()
		expect(ptySlaveFromLink('/dev/null')).toBeUndefined()
	})

	it('selects the live members of one session, never an excluded pid', () => {
		const base = { comm: 'x', ppid: 1, pgrp: 1, ttyNr: 0 }
		const stats = [
			{ ...base, pid: 10, state: 'S', session: 10 },
			{ ...base, pid: 11, state: 'R', session: 10 },
			{ ...base, pid: 12, state: 'Z', session: 10 },
			{ ...base, pid: 13, state: 'S', session: 99 },
			{ ...base, pid: 14, state: 'S', session: 10 },
		]
		expect(pidsInSession(stats, 10, new Set([14]))).toEqual([10, 11])
	})
})

describe('childrenOf (the children list where the kernel has no children file)', () => {
	const base = { comm: 'sh', pgrp: 1, session: 1, ttyNr: 0 }
	it.each<[string, number, number[]]>([
		['the live children of a parent, in pid order', 7, [9, 12]],
		['none for a leaf', 12, []],
		['never a zombie child', 3, []],
	])('%s', (_case, parent, expected) => {
		const stats = [
			{ ...base, pid: 12, ppid: 7, state: 'S' },
			{ ...base, pid: 9, ppid: 7, state: 'R' },
			{ ...base, pid: 10, ppid: 3, state: 'Z' },
			{ ...base, pid: 11, ppid: 9, state: 'S' },
		]
		expect(childrenOf(stats, parent)).toEqual(expected)
	})

	it('matches the kernel children file for this process', async () => {
		const child = spawn('sleep', ['5'])
		try {
			await new Promise((resolve) => child.once('spawn', resolve))
			expect(childrenOf(readAllProcStats(), process.pid)).toContain(child.pid)
			expect(readChildren(process.pid)).toContain(child.pid)
		} finally {
			child.kill('SIGKILL')
		}
	})
})
