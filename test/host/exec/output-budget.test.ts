/**
 * The budget of exec output a provider's sandboxes hold on the host together: the capture against
 * it (pure), then two sandboxes over the real agent sharing one budget — a flood is cut by name
 * when another exec holds the rest, while onOutput still sees everything and the holder keeps its
 * own; released results give the budget back. Positive controls: 90 MiB retained whole under the
 * default budget and the default per-exec cap.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	DEFAULT_EXEC_OUTPUT_BUDGET_BYTES,
	ExecOutputBudget,
} from '../../../src/host/exec/exec-output-budget.js'
import { ExecOutputCapture } from '../../../src/host/exec/exec-result-shapes.js'
import { type AgentSandbox, createAgentSandbox } from '../../../src/host/sandbox/agent-sandbox.js'
import { AgentTransport } from '../../../src/host/transport/agent-transport.js'
import { type StartedAgent, startAgent } from '../../helpers/agent-process.js'
import { expectBudgetHeld, playBudgetScene } from './output-budget-scenario.js'

const MiB = 1024 * 1024

describe('the capture against a budget', () => {
	it('keeps what the budget grants, names the cut, and still forwards the rest', () => {
		const budget = new ExecOutputBudget(10)
		const forwarded: string[] = []
		const capture = new ExecOutputCapture((chunk) => forwarded.push(chunk.data), 100, budget)
		capture.push({ stream: 'stdout', data: 'abcdef' })
		capture.push({ stream: 'stderr', data: 'ghij' })
		capture.push({ stream: 'stdout', data: 'klm' })
		capture.push({ stream: 'stderr', data: 'n' })
		expect(capture.stdout).toBe('abcdef')
		expect(capture.stderr).toBe('ghij')
		expect(capture.truncation).toEqual({ stdout: 'output-budget', stderr: 'output-budget' })
		expect(forwarded).toEqual(['abcdef', 'ghij', 'klm', 'n'])
		expect(budget.heldBytes).toBe(10)
		capture.release()
		capture.release()
		expect(budget.heldBytes).toBe(0)
	})

	it('keeps a stream cut by the budget a prefix, even once the budget has room again', () => {
		const budget = new ExecOutputBudget(4)
		const other = budget.take(2)
		const capture = new ExecOutputCapture(undefined, 100, budget)
		capture.push({ stream: 'stdout', data: 'abc' })
		budget.give(other)
		capture.push({ stream: 'stdout', data: 'def' })
		expect(capture.stdout).toBe('ab')
		expect(capture.truncation.stdout).toBe('output-budget')
	})

	it('names the per-exec cap when it, not the budget, cut the stream', () => {
		const capture = new ExecOutputCapture(undefined, 4, new ExecOutputBudget(100))
		capture.push({ stream: 'stdout', data: 'abcdef' })
		expect(capture.stdout).toBe('abcd')
		expect(capture.truncation).toEqual({ stdout: 'max-output-bytes' })
	})

	it('never splits a surrogate pair at the budget, and gives back the unit it did not keep', () => {
		const budget = new ExecOutputBudget(2)
		const capture = new ExecOutputCapture(undefined, 100, budget)
		capture.push({ stream: 'stdout', data: 'a😀' })
		expect(capture.stdout).toBe('a')
		expect(budget.heldBytes).toBe(1)
	})

	it('defaults to 256 MiB', () => {
		expect(DEFAULT_EXEC_OUTPUT_BUDGET_BYTES).toBe(256 * MiB)
		expect(new ExecOutputBudget().limitBytes).toBe(DEFAULT_EXEC_OUTPUT_BUDGET_BYTES)
	})
})

describe('sandboxes sharing a budget over the real agent', () => {
	let agent: StartedAgent
	const sandboxes: AgentSandbox[] = []

	function sandboxOn(budget?: ExecOutputBudget): AgentSandbox {
		const sandbox = createAgentSandbox({
			id: `budget-${sandboxes.length}`,
			transport: new AgentTransport({ kind: 'unix', path: agent.socketPath ?? '' }),
			rootDir: agent.workspace,
			environment: 'linux-namespace',
			release: async () => {},
			...(budget ? { outputBudget: budget } : {}),
		})
		sandboxes.push(sandbox)
		return sandbox
	}

	beforeAll(async () => {
		agent = await startAgent()
	})
	afterAll(async () => {
		await Promise.all(sandboxes.map((sandbox) => sandbox.destroy()))
		await agent?.stop()
	})

	it("cuts one sandbox's flood by name while another's output holds the budget, and gives it all back", async () => {
		const budget = new ExecOutputBudget(8 * MiB)
		const scene = {
			a: sandboxOn(budget),
			b: sandboxOn(budget),
			flagPath: `${agent.workspace}/budget-flag-1`,
			budgetBytes: 8 * MiB,
			heldBytes: 6 * MiB,
			floodBytes: 6 * MiB,
		}
		expectBudgetHeld(scene, await playBudgetScene(scene))
		expect(budget.heldBytes).toBe(0)
		// Positive control: with the budget free again the same flood is kept whole.
		const again = await scene.b.exec('/bin/sh', ['-c', `head -c ${6 * MiB} /dev/zero | tr '\\0' b`])
		expect(again.stdout.length).toBe(6 * MiB)
		expect(again.outputTruncation).toBeUndefined()
	})

	it('positive control: 90 MiB is kept whole under the default budget and the default per-exec cap', async () => {
		const sandbox = sandboxOn()
		const result = await sandbox.exec('/bin/sh', [
			'-c',
			`head -c ${90 * MiB} /dev/zero | tr '\\0' x`,
		])
		expect(result.exitCode).toBe(0)
		expect(result.stdout.length).toBe(90 * MiB)
		expect(result.stdoutTruncated).toBe(false)
		expect(result.outputTruncation).toBeUndefined()
	})
})
