/**
 * Which warm-start snapshots a full cache evicts (pure): least recently used first, only as many
 * as bring it to its bound, never one in use.
 */
import { describe, expect, it } from 'vitest'
import {
	decideSnapshotEvictions,
	type SnapshotEntryFact,
} from '../../../../src/backends/machine/snapshots/snapshot-eviction.js'

const entry = (key: string, usedAtMs: number, inUse = false): SnapshotEntryFact => ({
	key,
	usedAtMs,
	inUse,
})

describe('decideSnapshotEvictions', () => {
	it.each([
		{ name: 'under the bound: nothing', entries: [entry('a', 1), entry('b', 2)], max: 4, out: [] },
		{
			name: 'at the bound: nothing',
			entries: [entry('a', 1), entry('b', 2), entry('c', 3)],
			max: 3,
			out: [],
		},
		{
			name: 'one over: the least recently used',
			entries: [entry('new', 9), entry('old', 1), entry('mid', 5)],
			max: 2,
			out: ['old'],
		},
		{
			name: 'two over: the two oldest, oldest first',
			entries: [entry('d', 4), entry('a', 1), entry('c', 3), entry('b', 2)],
			max: 2,
			out: ['a', 'b'],
		},
		{
			name: 'the oldest in use: the next oldest instead',
			entries: [entry('a', 1, true), entry('b', 2), entry('c', 3)],
			max: 2,
			out: ['b'],
		},
		{
			name: 'every extra in use: the cache stays over its bound',
			entries: [entry('a', 1, true), entry('b', 2, true), entry('c', 3, true)],
			max: 1,
			out: [],
		},
		{
			name: 'in use counts toward the bound',
			entries: [entry('a', 1), entry('b', 2, true), entry('c', 3, true)],
			max: 2,
			out: ['a'],
		},
		{
			name: 'equal use times: by key, for a stable order',
			entries: [entry('y', 1), entry('x', 1), entry('z', 5)],
			max: 1,
			out: ['x', 'y'],
		},
		{ name: 'a bound of 0 is read as empty', entries: [entry('a', 1)], max: 0, out: ['a'] },
	])('$name', ({ entries, max, out }) => {
		expect(decideSnapshotEvictions(entries, max)).toEqual(out)
	})
})
