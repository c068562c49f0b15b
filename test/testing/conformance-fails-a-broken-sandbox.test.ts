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
	CorruptsReadsSandbox,
	IgnoresAbortSandbox,
	LeavesTerminalsRunningSandbox,
} from './broken-sandboxes.js'

let agent: StartedAgent

beforeAll(async () => {
	agent = await startAgent()
})

afterAll(async () => {
	await agent.stop()
})

/**
 * Each factory wraps a REAL working agent sandbox. To keep three whole suite runs cheap, every
 * case gets a fresh `Sandbox` handle over one shared plain agent (cases use unique paths); the
 * handle's destroy() still kills and awaits everything it opened.
 */
function wrapping(wrap: (inner: Sandbox) => Sandbox): MakeSandbox {
	return async () => {
		const inner = createAgentSandbox({
			id: `broken-${randomUUID().slice(0, 8)}`,
			transport: new AgentTransport({ kind: 'unix', path: agent.socketPath ?? '' }),
			rootDir: agent.workspace,
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
	it('fails exactly the abort case for an exec that resolves a clean success after abort', async () => {
		const outcomes = await runSuite(wrapping((inner) => new IgnoresAbortSandbox(inner)))
		const title =
			'an aborted exec terminates a command that ignores SIGTERM and never reads as an unaborted success'
		expect(failedTitles(outcomes)).toEqual([title])
		expect(failureMessage(outcomes, title)).toMatch(
			/^exit code of the aborted exec: expected 0 not to be 0/,
		)
	}, 60_000)

	it('fails exactly the terminal case for a destroy() that leaves a terminal running', async () => {
		const outcomes = await runSuite(wrapping((inner) => new LeavesTerminalsRunningSandbox(inner)))
		expect(failedTitles(outcomes)).toEqual([
			'destroy() kills and awaits every terminal the sandbox opened',
		])
	}, 60_000)

	it('fails exactly the read-back cases for a readFile that returns corrupted bytes', async () => {
		const outcomes = await runSuite(wrapping((inner) => new CorruptsReadsSandbox(inner)))
		expect(failedTitles(outcomes)).toEqual([
			'writeFile then readFile round-trips UTF-8 text, relative paths included',
			'writeFile then readFile round-trips binary bytes that are not valid UTF-8',
			'writeFile then readFile round-trips a body larger than one wire frame (9 MiB)',
			'readFile returns exactly the requested range and clips a range past the end of the file',
		])
		for (const title of failedTitles(outcomes)) {
			expect(failureMessage(outcomes, title)).toMatch(
				/^(read back by|byte comparison|sha-256|bytes of)/,
			)
		}
	}, 60_000)
})
