/**
 * The reaper's decisions (pure, table-driven): a state root, a claim lock and when it may be freed,
 * a runtime cache entry, a sandbox's cgroups no record owns.
 */
import { describe, expect, it } from 'vitest'
import {
	decideLockRelease,
	decideStateRoot,
	lockIsOrphan,
	partialIsAbandoned,
	RUNTIME_ENTRY_GRACE_MS,
	runtimeEntryIsGarbage,
	type StateRootFacts,
	sandboxCgroupIsOrphan,
	UNRECORDED_GRACE_MS,
} from '../../../../src/backends/machine/claims/reap-decision.js'

const NOW = 1_000_000_000

describe('decideStateRoot', () => {
	const fresh = { nowMs: NOW, ageMs: 1000 }
	const cases: [string, StateRootFacts, ReturnType<typeof decideStateRoot>][] = [
		[
			'a sandbox whose owner lives is its owner’s',
			{ ...fresh, owner: 'alive' },
			{ reap: false, reason: 'owner-alive' },
		],
		[
			'a sandbox whose owner is gone (pid absent or reused) is reaped',
			{ ...fresh, owner: 'gone' },
			{ reap: true, reason: 'owner-gone' },
		],
		[
			'an old record without an owner cannot be proven abandoned',
			{ ...fresh, ageMs: UNRECORDED_GRACE_MS * 10, owner: 'unrecorded' },
			{ reap: false, reason: 'owner-unrecorded' },
		],
		[
			'a kept-alive sandbox in date with its watchdog alive outlives its dead creator',
			{ ...fresh, owner: 'gone', keptAlive: { expiresAtMs: NOW + 1, launcherAlive: true } },
			{ reap: false, reason: 'kept-alive' },
		],
		[
			'a kept-alive sandbox past its lifetime is reaped',
			{ ...fresh, owner: 'alive', keptAlive: { expiresAtMs: NOW, launcherAlive: true } },
			{ reap: true, reason: 'expired' },
		],
		[
			'an expired kept-alive sandbox whose watchdog is gone is reaped',
			{ ...fresh, keptAlive: { expiresAtMs: NOW - 1, launcherAlive: false } },
			{ reap: true, reason: 'expired' },
		],
		[
			'a kept-alive sandbox whose watchdog died early is reaped',
			{ ...fresh, owner: 'alive', keptAlive: { expiresAtMs: NOW + 60_000, launcherAlive: false } },
			{ reap: true, reason: 'watchdog-gone' },
		],
		[
			'a state root without a record may be a create in progress',
			{ nowMs: NOW, ageMs: UNRECORDED_GRACE_MS - 1 },
			{ reap: false, reason: 'too-new' },
		],
		[
			'a state root without a record past the grace, that no process mentions, is reaped',
			{ nowMs: NOW, ageMs: UNRECORDED_GRACE_MS, mentioned: false },
			{ reap: true, reason: 'unrecorded' },
		],
		[
			'a state root without a record that a live process mentions (an older version’s) stays',
			{ nowMs: NOW, ageMs: UNRECORDED_GRACE_MS * 10, mentioned: true },
			{ reap: false, reason: 'in-use' },
		],
	]
	it.each(cases)('%s', (_, facts, expected) => {
		expect(decideStateRoot(facts)).toEqual(expected)
	})
})

describe('decideLockRelease: a uid or workspace lock is never freed while its sandbox runs or is grouped', () => {
	it.each([
		['nothing of the sandbox is left', { uidProcesses: 0, cgroups: 0 }, { release: true }],
		[
			'a process of its uid survives (outside every group of the sandbox)',
			{ uidProcesses: 1, cgroups: 0 },
			{ release: false, reason: 'uid-process-running' },
		],
		[
			'a cgroup of the sandbox still exists (empty or not)',
			{ uidProcesses: 0, cgroups: 2 },
			{ release: false, reason: 'cgroup-exists' },
		],
		[
			'both: the running process is named first',
			{ uidProcesses: 3, cgroups: 1 },
			{ release: false, reason: 'uid-process-running' },
		],
	] as const)('%s', (_, facts, expected) => {
		expect(decideLockRelease(facts)).toEqual(expected)
	})
})

describe('lockIsOrphan', () => {
	const free = { uidProcesses: 0, cgroups: 0 }
	it.each([
		['state root gone, taker gone', { ...free, stateRootExists: false, takerAlive: false }, true],
		[
			'state root gone, taker alive (it takes the uid lock before it makes the root)',
			{ ...free, stateRootExists: false, takerAlive: true },
			false,
		],
		[
			'state root present (its record releases the lock)',
			{ ...free, stateRootExists: true, takerAlive: false },
			false,
		],
		['both present', { ...free, stateRootExists: true, takerAlive: true }, false],
		[
			'state root and taker gone, a process of the uid still runs',
			{ stateRootExists: false, takerAlive: false, uidProcesses: 1, cgroups: 0 },
			false,
		],
		[
			'state root and taker gone, a cgroup of the sandbox still exists',
			{ stateRootExists: false, takerAlive: false, uidProcesses: 0, cgroups: 1 },
			false,
		],
	])('%s', (_, facts, expected) => {
		expect(lockIsOrphan(facts)).toBe(expected)
	})
})

describe('sandboxCgroupIsOrphan: top-level namzu-sbx-<id> groups no record owns', () => {
	const old = UNRECORDED_GRACE_MS
	it.each([
		['unowned, empty and old', { owned: false, populated: false, ageMs: old }, true],
		['owned by a record the reaper kept', { owned: true, populated: false, ageMs: old * 9 }, false],
		[
			'a process runs in it (a live sandbox elsewhere)',
			{ owned: false, populated: true, ageMs: old * 9 },
			false,
		],
		[
			'younger than a create takes to start its agent',
			{ owned: false, populated: false, ageMs: old - 1 },
			false,
		],
	])('%s', (_, facts, expected) => {
		expect(sandboxCgroupIsOrphan(facts)).toBe(expected)
	})
})

describe('runtimeEntryIsGarbage', () => {
	const old = RUNTIME_ENTRY_GRACE_MS
	const keep = new Set(['node-1-2-3-4', 'node-1-2-3-4.readable', 'agent-5-6-7-8.cjs'])
	it.each([
		['the current node copy', { name: 'node-1-2-3-4', ageMs: old * 9 }, false],
		['the current readable node copy', { name: 'node-1-2-3-4.readable', ageMs: old * 9 }, false],
		['the current agent bundle', { name: 'agent-5-6-7-8.cjs', ageMs: old * 9 }, false],
		['an old node copy nothing names', { name: 'node-a-b-c-d', ageMs: old }, true],
		['its readable sibling', { name: 'node-a-b-c-d.readable', ageMs: old }, true],
		['an old agent bundle nothing names', { name: 'agent-a-b-c-d.cjs', ageMs: old }, true],
		['a copy written a moment ago', { name: 'node-a-b-c-d', ageMs: old - 1 }, false],
		['the shared empty file', { name: 'empty', ageMs: old * 9 }, false],
		['something not ours to judge', { name: 'notes.txt', ageMs: old * 9 }, false],
		[
			'a half-written copy whose writer died',
			{ name: 'node-a-b-c-d.tmp-123-abcd', ageMs: 0, writerAlive: false },
			true,
		],
		[
			'a copy its live writer is still writing',
			{ name: 'node-a-b-c-d.tmp-123-abcd', ageMs: old * 9, writerAlive: true },
			false,
		],
	])('%s', (_, entry, expected) => {
		expect(runtimeEntryIsGarbage(entry, keep)).toBe(expected)
	})
})

describe('partialIsAbandoned: a capture or snapshot build whose writer died', () => {
	const grace = UNRECORDED_GRACE_MS
	it.each([
		{
			name: 'recorded writer alive, however old',
			writerAlive: true,
			ageMs: 10 * grace,
			expected: false,
		},
		{ name: 'recorded writer gone, however new', writerAlive: false, ageMs: 0, expected: true },
		{
			name: 'none recorded, younger than the grace',
			writerAlive: undefined,
			ageMs: grace - 1,
			expected: false,
		},
		{ name: 'none recorded, at the grace', writerAlive: undefined, ageMs: grace, expected: true },
	])('$name', ({ writerAlive, ageMs, expected }) => {
		expect(partialIsAbandoned({ writerAlive, ageMs })).toBe(expected)
	})
})
