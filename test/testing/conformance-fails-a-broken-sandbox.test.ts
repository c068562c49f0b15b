import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Sandbox } from '../../src/contract/sandbox.js'
import { AgentSandbox, createAgentSandbox } from '../../src/host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../src/host/transport/agent-transport.js'
import {
	createRecordingHarness,
	defineSandboxConformance,
	type MakeSandbox,
	type RecordedOutcome,
} from '../../src/testing/index.js'
import { type StartedAgent, startAgent } from '../helpers/agent-process.js'
import {
	makeThrowawayCgroups,
	processesWithMarker,
	type ThrowawayCgroups,
	v1WorkloadCgroupsSkipReason,
} from '../helpers/throwaway-cgroups.js'
import {
	CorruptsReadsSandbox,
	ForwardingSandbox,
	IgnoresAbortSandbox,
	LeavesTerminalsRunningSandbox,
} from './broken-sandboxes.js'

const cgroupsSkip = v1WorkloadCgroupsSkipReason()
if (cgroupsSkip) console.warn(`the detached-descendants run is skipped: ${cgroupsSkip}`)

/** A working agent: with per-command cgroups where this machine allows them. */
let agent: StartedAgent
let groups: ThrowawayCgroups | undefined
/** An agent without them: it kills a command's process group and nothing that left it. */
let groupless: StartedAgent

beforeAll(async () => {
	groups = cgroupsSkip === undefined ? makeThrowawayCgroups() : undefined
	agent = await startAgent(groups ? { env: groups.env, extraStdio: groups.extraStdio } : {})
	groups?.closeFds()
	groupless = await startAgent()
})

afterAll(async () => {
	await agent.stop()
	await groups?.remove()
	// What the groupless agent let escape stops by itself within 10 s; never leave it to that.
	for (const pid of processesWithMarker(groupless.workspace)) process.kill(pid, 'SIGKILL')
	await groupless.stop()
})

/**
 * Each factory wraps a REAL agent sandbox. To keep four whole suite runs cheap, every case gets a
 * fresh `Sandbox` handle over one shared agent (cases use unique paths); the handle's destroy()
 * still kills and awaits everything it opened.
 */
function wrapping(wrap: (inner: Sandbox) => Sandbox, over: () => StartedAgent = () => agent) {
	return async () => {
		const target = over()
		const inner = createAgentSandbox({
			id: `broken-${randomUUID().slice(0, 8)}`,
			transport: new AgentTransport({ kind: 'unix', path: target.socketPath ?? '' }),
			rootDir: target.workspace,
			environment: 'basic',
			release: async () => {},
		})
		return { sandbox: wrap(inner), dispose: () => inner.destroy() }
	}
}

async function runSuite(makeSandbox: MakeSandbox): Promise<RecordedOutcome[]> {
	const harness = createRecordingHarness({ defaultTimeoutMs: 20_000 })
	defineSandboxConformance(harness.framework, makeSandbox, {
		label: 'broken',
		supportsRangedAndStreamedReads: true,
		sandboxShape: AgentSandbox.prototype,
		...(cgroupsSkip === undefined
			? {}
			: { capabilities: { killsDetachedDescendants: { supported: false, reason: cgroupsSkip } } }),
	})
	return harness.run()
}

function failedTitles(outcomes: readonly RecordedOutcome[]): string[] {
	return outcomes.filter((outcome) => outcome.status === 'failed').map((outcome) => outcome.title)
}

/** Why a case failed: its assertion message, so a failure for the wrong reason shows up. */
function failureMessage(outcomes: readonly RecordedOutcome[], title: string): string {
	const outcome = outcomes.find((candidate) => candidate.title === title)
	return outcome?.error instanceof Error ? outcome.error.message : String(outcome?.error)
}

describe('the conformance suite against deliberately broken sandboxes', () => {
	// Each run below asserts that every OTHER case passes, so together they also show the wrappers
	// forward faithfully: every case passes against at least two of them.
	it('fails exactly the abort case for an exec that resolves a clean success after abort (and the whole-tree case, which aborts too)', async () => {
		const outcomes = await runSuite(wrapping((inner) => new IgnoresAbortSandbox(inner)))
		const titles = [
			'an aborted exec terminates a command that ignores SIGTERM and never reads as an unaborted success',
			// Its command is never ended, let alone what it started (registered when cgroups exist).
			...(cgroupsSkip === undefined
				? ['abort ends every descendant, including setsid/double-forked ones']
				: []),
		]
		expect(failedTitles(outcomes)).toEqual(titles)
		for (const title of titles) {
			expect(failureMessage(outcomes, title)).toMatch(
				/^exit code of the aborted exec: expected 0 not to be 0/,
			)
		}
	}, 60_000)

	it('fails exactly the terminal case for a destroy() that leaves a terminal running', async () => {
		const outcomes = await runSuite(wrapping((inner) => new LeavesTerminalsRunningSandbox(inner)))
		expect(failedTitles(outcomes)).toEqual([
			'destroy() kills and awaits every terminal the sandbox opened',
		])
	}, 60_000)

	it.skipIf(cgroupsSkip !== undefined)(
		'fails exactly the whole-tree case for a sandbox whose abort leaves a setsid descendant running',
		async () => {
			// The working sandbox's own agent, minus its per-command cgroups: a real leak, not a fake.
			const outcomes = await runSuite(
				wrapping(
					(inner) => new ForwardingSandbox(inner),
					() => groupless,
				),
			)
			const title = 'abort ends every descendant, including setsid/double-forked ones'
			expect(failedTitles(outcomes)).toEqual([title])
			expect(failureMessage(outcomes, title)).toMatch(
				/^descendants still running after the aborted exec settled: expected \[ 'setsid', 'double-forked' \] to equal \[\]/,
			)
		},
		60_000,
	)

	it('fails exactly the read-back cases for a readFile that returns corrupted bytes', async () => {
		const outcomes = await runSuite(wrapping((inner) => new CorruptsReadsSandbox(inner)))
		expect(failedTitles(outcomes)).toEqual([
			'writeFile then readFile round-trips UTF-8 text, relative paths included',
			'writeFile then readFile round-trips binary bytes that are not valid UTF-8',
			'writeFile then readFile round-trips a body larger than one wire frame (9 MiB)',
			'readFile returns exactly the requested range and clips a range past the end of the file',
			'a path listFiles or walkFiles returns goes straight back into readFile and is never a host path',
		])
		for (const title of failedTitles(outcomes)) {
			expect(failureMessage(outcomes, title)).toMatch(
				/^(read back by|byte comparison|sha-256|bytes of)/,
			)
		}
	}, 60_000)
})
