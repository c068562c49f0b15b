import { describe, expect, it } from 'vitest'
import {
	isDeadState,
	procStatField,
	procStatNumber,
	readProcStatText,
	readProcStatTextAsync,
	splitProcStat,
} from '../../src/common/proc-stat.js'

// A full line whose comm holds spaces and parentheses; starttime (field 22) is 987654.
const full =
	'4242 (we ird) (name) S 1 4242 4243 34816 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100'

describe('splitProcStat', () => {
	it('counts the fields from the last parenthesis', () => {
		const line = splitProcStat(full)
		expect(line?.pidText).toBe('4242')
		expect(line?.comm).toBe('we ird) (name')
		expect(line?.after.slice(0, 3)).toEqual(['S', '1', '4242'])
	})

	it.each([
		['no parentheses', 'garbage'],
		['a close before the open', '1 )x( S'],
		['empty', ''],
	])('refuses %s', (_title, text) => {
		expect(splitProcStat(text)).toBeUndefined()
	})

	it('keeps a line cut short after comm, with no fields', () => {
		expect(splitProcStat('12 (x)')).toEqual({ pidText: '12', comm: 'x', after: [] })
	})
})

describe('fields by name', () => {
	const line = splitProcStat(full)
	if (!line) throw new Error('fixture does not parse')
	it.each([
		['state', 'S'],
		['ppid', '1'],
		['pgrp', '4242'],
		['session', '4243'],
		['ttyNr', '34816'],
		['startTime', '987654'],
	] as const)('%s is %s', (name, value) => {
		expect(procStatField(line, name)).toBe(value)
	})

	it('answers numbers only for safe integers, and undefined past a short line', () => {
		expect(procStatNumber(line, 'session')).toBe(4243)
		expect(procStatNumber(line, 'state')).toBeUndefined()
		const short = splitProcStat('9 (a) R 5')
		expect(short && procStatNumber(short, 'ppid')).toBe(5)
		expect(short && procStatNumber(short, 'pgrp')).toBeUndefined()
	})

	it.each([
		['Z', true],
		['X', true],
		['S', false],
		['R', false],
		[undefined, false],
	])('state %s is dead: %s', (state, dead) => {
		expect(isDeadState(state)).toBe(dead)
	})
})

describe('readers', () => {
	it('read this process, synchronously and not', async () => {
		const sync = readProcStatText(process.pid)
		const line = sync === undefined ? undefined : splitProcStat(sync)
		expect(line?.pidText).toBe(String(process.pid))
		const async = await readProcStatTextAsync(process.pid)
		expect(async === undefined ? undefined : splitProcStat(async)?.pidText).toBe(
			String(process.pid),
		)
	})

	it('answer undefined for a pid that does not exist', async () => {
		// Above the kernel's pid_max ceiling (2^22), so never a live process.
		expect(readProcStatText(2 ** 23)).toBeUndefined()
		expect(await readProcStatTextAsync(2 ** 23)).toBeUndefined()
	})
})
