import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { Sandbox } from '../../src/contract/sandbox.js'
import { AgentSandbox } from '../../src/host/sandbox/agent-sandbox.js'
import {
	ConformanceAssertionError,
	ConformanceCaseTimeoutError,
	createMinimalExpect,
	createRecordingHarness,
	defineSandboxConformance,
	type MakeSandbox,
	SANDBOX_CONTRACT_VERSION,
} from '../../src/testing/index.js'

const neverCalled: MakeSandbox = async () => {
	throw new Error('registration must not create a sandbox')
}

describe('createRecordingHarness', () => {
	it('records titles with their describe path and runs cases, capturing each outcome', async () => {
		const harness = createRecordingHarness()
		const { describe: d, it: test, expect: check } = harness.framework
		d('outer', () => {
			d('inner', () => {
				test('passes', async () => check(1 + 1).toBe(2))
				test('fails', async () => check('a').toBe('b'))
			})
			test.skip?.('is skipped', async () => {})
			test('times out', () => new Promise(() => {}), 50)
		})
		expect(harness.cases.map((c) => c.fullTitle)).toEqual([
			'outer > inner > passes',
			'outer > inner > fails',
			'outer > is skipped',
			'outer > times out',
		])
		const outcomes = await harness.run()
		expect(outcomes.map((o) => [o.title, o.status])).toEqual([
			['passes', 'passed'],
			['fails', 'failed'],
			['is skipped', 'skipped'],
			['times out', 'failed'],
		])
		expect(outcomes[1]?.error).toBeInstanceOf(ConformanceAssertionError)
		expect(outcomes[3]?.error).toBeInstanceOf(ConformanceCaseTimeoutError)
	})
})

describe('createMinimalExpect', () => {
	const check = createMinimalExpect()
	it.each([
		['toBe', () => check(3).toBe(3), () => check(3).toBe('3')],
		[
			'toEqual',
			() => check({ a: [1] }).toEqual({ a: [1] }),
			() => check({ a: [1] }).toEqual({ a: [2] }),
		],
		['toBeGreaterThan', () => check(2).toBeGreaterThan(1), () => check(1).toBeGreaterThan(1)],
		[
			'toBeGreaterThanOrEqual',
			() => check(1).toBeGreaterThanOrEqual(1),
			() => check(0).toBeGreaterThanOrEqual(1),
		],
		[
			'toBeLessThanOrEqual',
			() => check(1).toBeLessThanOrEqual(1),
			() => check(2).toBeLessThanOrEqual(1),
		],
		['toMatch', () => check('abc').toMatch(/b/), () => check('abc').toMatch('x')],
		['toContain', () => check([1, 2]).toContain(2), () => check('abc').toContain('x')],
		['not.toBe', () => check(1).not.toBe(2), () => check(1).not.toBe(1)],
	] as const)('%s holds or throws a ConformanceAssertionError', (_, holds, breaks) => {
		expect(holds).not.toThrow()
		expect(breaks).toThrow(ConformanceAssertionError)
	})

	it('puts the label of what was checked first in the message', () => {
		expect(() => check(0, 'exit code').not.toBe(0)).toThrow(/^exit code: expected 0 not to be 0$/)
	})
})

describe('the testing module', () => {
	it('imports no test framework, only node built-ins and this package', () => {
		const dir = join(import.meta.dirname, '../../src/testing')
		const specifiers = readdirSync(dir)
			.filter((name) => name.endsWith('.ts'))
			.flatMap((name) =>
				[...readFileSync(join(dir, name), 'utf8').matchAll(/from '([^']+)'/g)].map((m) => m[1]),
			)
		expect(specifiers.length).toBeGreaterThan(0)
		expect(specifiers.filter((s) => !s?.startsWith('node:') && !s?.startsWith('.'))).toEqual([])
	})
})

describe('defineSandboxConformance registration', () => {
	function titles(options: Parameters<typeof defineSandboxConformance>[2]) {
		const harness = createRecordingHarness()
		defineSandboxConformance(harness.framework, neverCalled, options)
		return harness.cases
	}

	it('is contract version 5', () => {
		expect(SANDBOX_CONTRACT_VERSION).toBe(5)
	})

	it('registers every case under one describe naming the contract version and label, creating nothing', () => {
		const cases = titles({
			label: 'x',
			supportsRangedAndStreamedReads: true,
			sandboxShape: AgentSandbox.prototype,
			// Asked only when a case runs: registering never calls it.
			checkpointProvider: () => {
				throw new Error('asked at registration')
			},
		})
		expect(cases).toHaveLength(45)
		expect(cases.every((c) => c.path[0] === 'Sandbox conformance (contract v5): x')).toBe(true)
		expect(cases.filter((c) => c.skipped)).toEqual([])
		expect(new Set(cases.map((c) => c.path[1]))).toEqual(
			new Set([
				'exec',
				'background',
				'files',
				'file verbs',
				'watch and events',
				'walkFiles',
				'terminals and tcp',
				'exposePort',
				'checkpoints',
				'destroy',
			]),
		)
	})

	it('skips the checkpoint cases without a checkpointProvider, saying why in the title', () => {
		const skipped = titles({ sandboxShape: AgentSandbox.prototype }).filter(
			(c) => c.skipped && c.path[1] === 'checkpoints',
		)
		expect(skipped).toHaveLength(7)
		expect(skipped.every((c) => c.title.endsWith('(skipped: no checkpointProvider given)'))).toBe(
			true,
		)
	})

	it('skips the ranged and streamed read cases by default, saying why in the title', () => {
		const skipped = titles({ sandboxShape: AgentSandbox.prototype }).filter(
			(c) => c.skipped && c.path[1] !== 'checkpoints',
		)
		expect(skipped.map((c) => c.title)).toEqual([
			'readFile returns exactly the requested range and clips a range past the end of the file (skipped: supportsRangedAndStreamedReads is false)',
			'readFileStream yields a multi-MiB file in order and stops cleanly when the loop exits early (skipped: supportsRangedAndStreamedReads is false)',
		])
	})

	it('skips the whole-tree abort case for a sandbox that declares it cannot kill detached descendants, saying why', () => {
		const title = 'abort ends every descendant, including setsid/double-forked ones'
		const declared = titles({
			sandboxShape: AgentSandbox.prototype,
			supportsRangedAndStreamedReads: true,
			capabilities: {
				killsDetachedDescendants: { supported: false, reason: 'no per-command cgroups here' },
			},
		})
		const declaredSkips = declared.filter((c) => c.skipped && c.path[1] !== 'checkpoints')
		expect(declaredSkips.map((c) => c.title)).toEqual([
			`${title} (skipped: the sandbox cannot kill detached descendants: no per-command cgroups here)`,
		])
		const byDefault = titles({ sandboxShape: AgentSandbox.prototype })
		const registered = byDefault.find((c) => c.title === title)
		expect(registered?.skipped, 'registered to run by default').toBe(false)
		expect(registered?.path[1]).toBe('exec')
	})

	it('skips the walkFiles, file verb, watch, terminal and tcp cases for a sandbox without those members', () => {
		const shape: Partial<Sandbox> = {}
		const skipped = titles({ sandboxShape: shape, supportsRangedAndStreamedReads: true }).filter(
			(c) => c.skipped && c.path[1] !== 'checkpoints',
		)
		expect(skipped.filter((c) => c.path[1] === 'walkFiles')).toHaveLength(9)
		expect(skipped.every((c) => / \(skipped: the sandbox has no \w+\)$/.test(c.title))).toBe(true)
		expect(skipped.map((c) => c.title)).toContain(
			'openTcpConnection reaches an echo listener started inside the guest (skipped: the sandbox has no openTerminal)',
		)
		expect(skipped.map((c) => c.title)).toContain(
			'openTcpConnection refuses a host that is not loopback (skipped: the sandbox has no openTcpConnection)',
		)
		expect(skipped.map((c) => c.title)).toContain(
			'exposePort serves a guest listener on a loopback URL with its token, 401 without it, until destroy (skipped: the sandbox has no openTerminal)',
		)
		expect(skipped.filter((c) => c.path[1] === 'file verbs')).toHaveLength(3)
		expect(skipped.filter((c) => c.path[1] === 'watch and events')).toHaveLength(2)
		expect(skipped.filter((c) => c.path[1] === 'background')).toHaveLength(1)
		expect(skipped).toHaveLength(19)
	})

	it('skips the in-guest listener case when the guest cannot run node and no listener command is given', () => {
		const shape = AgentSandbox.prototype
		const withoutNode = titles({ sandboxShape: shape, guestCanRunNode: false }).filter(
			(c) => c.skipped,
		)
		expect(withoutNode.map((c) => c.title)).toContain(
			'openTcpConnection reaches an echo listener started inside the guest (skipped: the guest cannot run node and no guestListenerCommand was given)',
		)
		const withCommand = titles({
			sandboxShape: shape,
			guestCanRunNode: false,
			guestListenerCommand: (port) => ({
				command: 'socat',
				args: [`TCP-LISTEN:${port}`, 'EXEC:cat'],
			}),
		})
		expect(withCommand.find((c) => c.title.startsWith('openTcpConnection reaches'))?.skipped).toBe(
			false,
		)
	})

	it('without a sandboxShape, skips at run time through the framework when a member is missing', async () => {
		const harness = createRecordingHarness()
		const bare = { destroy: async () => {} } as unknown as Sandbox
		defineSandboxConformance(harness.framework, async () => ({ sandbox: bare }))
		const walkCase = harness.cases.find(
			(c) => c.title === 'walkFiles of a missing root yields nothing',
		)
		const notes: string[] = []
		await walkCase?.fn({ skip: (note) => notes.push(String(note)) })
		expect(notes).toEqual(['the sandbox has no walkFiles'])
	})
})
