import { describe, expect, it } from 'vitest'
import { withLifetimeWatchdog } from '../../../src/backends/local/lifetime-watchdog.js'
import { LocalKeepAliveUnavailableError } from '../../../src/backends/local/local-errors.js'
import {
	parseStatStartTime,
	statMatches,
} from '../../../src/backends/machine/claims/process-identity.js'
import {
	DESCRIPTOR_VERSION,
	descriptorBelongsTo,
	descriptorState,
	isLocalSandboxId,
	type LocalSandboxDescriptor,
	parseDescriptor,
	serializeDescriptor,
} from '../../../src/backends/machine/claims/sandbox-descriptor.js'
import {
	DEFAULT_KEEP_ALIVE_MS,
	MAX_KEEP_ALIVE_MS,
	resolveKeepAliveMs,
} from '../../../src/backends/machine/spec/keep-alive-lifetime.js'
import {
	canServeFromPool,
	resolveMachineSandboxSpec,
} from '../../../src/backends/machine/spec/machine-sandbox-spec.js'
import { SandboxConfigError } from '../../../src/contract/errors.js'

const root = '/tmp/state/namzu-sbx-0123456789ab'
const descriptor: LocalSandboxDescriptor = {
	version: DESCRIPTOR_VERSION,
	id: '0123456789ab',
	socketPath: `${root}/control/agent.sock`,
	pid: 4242,
	pidStartTime: '987654',
	stateRoot: root,
	workspace: `${root}/workspace`,
	callerOwnsWorkspace: false,
	cgroupDirs: ['/sys/fs/cgroup/memory/user/namzu-sbx-0123456789ab'],
	isolation: 'bubblewrap',
	environment: 'linux-bwrap',
	createdAtMs: 1_000,
	expiresAtMs: 61_000,
}

// A /proc/<pid>/stat line whose comm holds spaces and parentheses; starttime (field 22) is 987654.
const stat =
	'4242 (we ird) (name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0'

describe('process identity', () => {
	it('reads the start time after a comm with spaces and parentheses', () => {
		expect(parseStatStartTime(stat)).toBe('987654')
	})
	const cases: Array<[string, string | undefined, string, boolean]> = [
		['the same process', stat, '987654', true],
		['a reused pid (another start time)', stat, '111', false],
		['a zombie', stat.replace(') S ', ') Z '), '987654', false],
		['a vanished process', undefined, '987654', false],
		['garbage', 'no parenthesis here', '987654', false],
	]
	for (const [title, text, startTime, expected] of cases) {
		it(`statMatches: ${title} ⇒ ${expected}`, () => {
			expect(statMatches(text, startTime)).toBe(expected)
		})
	}
})

describe('sandbox descriptors', () => {
	it('round-trips through serialize and parse', () => {
		expect(parseDescriptor(serializeDescriptor(descriptor))).toEqual(descriptor)
	})
	const broken: Array<[string, unknown]> = [
		['not JSON', '{'],
		['another version', { ...descriptor, version: 2 }],
		['a path-like id', { ...descriptor, id: '../../etc' }],
		['a non-integer pid', { ...descriptor, pid: 1.5 }],
		['cgroup dirs that are not strings', { ...descriptor, cgroupDirs: [1] }],
		['an unknown isolation', { ...descriptor, isolation: 'vm' }],
		['a missing expiry', { ...descriptor, expiresAtMs: undefined }],
	]
	for (const [title, value] of broken) {
		it(`refuses ${title}`, () => {
			expect(parseDescriptor(typeof value === 'string' ? value : JSON.stringify(value))).toBe(
				undefined,
			)
		})
	}
	const belonging: Array<[string, Partial<LocalSandboxDescriptor>, boolean]> = [
		['the record as written', {}, true],
		['a state root elsewhere', { stateRoot: '/' }, false],
		['a socket elsewhere', { socketPath: '/run/docker.sock' }, false],
		[
			'a cgroup of another sandbox',
			{ cgroupDirs: ['/sys/fs/cgroup/pids/namzu-sbx-ffffffffffff'] },
			false,
		],
		['a relative cgroup path', { cgroupDirs: ['namzu-sbx-0123456789ab'] }, false],
		['an ephemeral workspace outside the root', { workspace: '/home/user' }, false],
		[
			'a caller-owned workspace outside the root',
			{ workspace: '/home/user', callerOwnsWorkspace: true },
			true,
		],
	]
	for (const [title, change, expected] of belonging) {
		it(`descriptorBelongsTo: ${title} ⇒ ${expected}`, () => {
			expect(descriptorBelongsTo({ ...descriptor, ...change }, '0123456789ab', root)).toBe(expected)
		})
	}
	const states: Array<[string, number, boolean, string]> = [
		['in date and alive', 30_000, true, 'running'],
		['in date, launcher gone', 30_000, false, 'dead'],
		['past its expiry, still alive', 61_000, true, 'expired'],
		['past its expiry and gone', 90_000, false, 'expired'],
	]
	for (const [title, now, alive, expected] of states) {
		it(`descriptorState: ${title} ⇒ ${expected}`, () => {
			expect(descriptorState(descriptor, now, alive)).toBe(expected)
		})
	}
	it('accepts only minted sandbox ids', () => {
		expect(isLocalSandboxId('0123456789ab')).toBe(true)
		for (const id of ['', '0123456789AB', '0123456789a', '../0123456789', '0123456789abc']) {
			expect(isLocalSandboxId(id)).toBe(false)
		}
	})
})

describe('keep-alive settings', () => {
	const accepted: Array<[string, unknown, unknown, number | undefined]> = [
		['not kept alive by default', undefined, undefined, undefined],
		['keepAlive: false', false, undefined, undefined],
		['keepAlive with the default lifetime', true, undefined, DEFAULT_KEEP_ALIVE_MS],
		['keepAlive with a lifetime', true, 5_000, 5_000],
		['the longest lifetime', true, MAX_KEEP_ALIVE_MS, MAX_KEEP_ALIVE_MS],
	]
	for (const [title, keepAlive, keepAliveMs, expected] of accepted) {
		it(title, () => {
			expect(resolveKeepAliveMs(keepAlive, keepAliveMs)).toBe(expected)
		})
	}
	const refused: Array<[string, unknown, unknown]> = [
		['keepAliveMs without keepAlive', undefined, 5_000],
		['a non-boolean keepAlive', 'yes', undefined],
		['a lifetime below a second', true, 10],
		['a lifetime above seven days', true, MAX_KEEP_ALIVE_MS + 1],
		['a fractional lifetime', true, 1500.5],
	]
	for (const [title, keepAlive, keepAliveMs] of refused) {
		it(`refuses ${title} with SandboxConfigError`, () => {
			expect(() => resolveKeepAliveMs(keepAlive, keepAliveMs)).toThrow(SandboxConfigError)
		})
	}
	it('runs the sandbox under a SIGKILL watchdog with the lifetime in seconds', () => {
		expect(
			withLifetimeWatchdog('/usr/bin/timeout', 1500, ['/usr/bin/bwrap', '--', 'node']),
		).toEqual(['/usr/bin/timeout', '--signal=KILL', '1.500s', '/usr/bin/bwrap', '--', 'node'])
	})
	it('never serves a kept-alive request from the warm pool', () => {
		const pooled = resolveMachineSandboxSpec({}, {})
		expect(canServeFromPool(pooled, resolveMachineSandboxSpec({}, {}))).toBe(true)
		expect(canServeFromPool(pooled, resolveMachineSandboxSpec({ keepAlive: true }, {}))).toBe(false)
	})
})

describe('LocalKeepAliveUnavailableError', () => {
	it.each([
		[
			'/nope/timeout',
			undefined,
			"coreutils timeout at /nope/timeout to bound the sandbox's lifetime",
		],
		[
			'/usr/bin/timeout',
			'/nope/tail',
			"coreutils tail at /nope/tail to keep the sandbox's stderr log bounded",
		],
	])('names the program that is missing (%s, %s)', (timeoutPath, missing, text) => {
		const error = new LocalKeepAliveUnavailableError(timeoutPath, {}, missing)
		expect(error.message).toContain(text)
		expect(error.missingPath).toBe(missing ?? timeoutPath)
		expect(error.reason).toBe('keep-alive-unavailable')
	})
})
