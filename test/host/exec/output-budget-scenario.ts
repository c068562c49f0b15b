/**
 * The provider-budget scene every tier's test plays: sandbox A prints `heldBytes` and waits, so
 * its output stays held; sandbox B (another sandbox drawing on the same budget) then floods. B
 * keeps only what the budget has left, is told why, and still streams every chunk to `onOutput`;
 * A, released, keeps all of its own. Waits are on output and on a file, never on time.
 */
import { expect } from 'vitest'
import type { Sandbox, SandboxExecResult } from '../../../src/index.js'

export interface BudgetScene {
	readonly a: Sandbox
	readonly b: Sandbox
	/** An absolute path in A's workspace: A waits for it, and the scene writes it through A. */
	readonly flagPath: string
	readonly budgetBytes: number
	/** What A holds while B floods (less than the budget). */
	readonly heldBytes: number
	/** What B prints (more than the budget leaves it). */
	readonly floodBytes: number
}

/** `sh -c` printing `bytes` of `letter` (then, with `waitFor`, waiting for that file). */
function printer(letter: string, bytes: number, waitFor?: string): [string, string[]] {
	const wait = waitFor === undefined ? '' : `; while [ ! -e '${waitFor}' ]; do sleep 0.02; done`
	return ['/bin/sh', ['-c', `head -c ${bytes} /dev/zero | tr '\\0' ${letter}${wait}`]]
}

export async function playBudgetScene(scene: BudgetScene): Promise<{
	readonly a: SandboxExecResult
	readonly b: SandboxExecResult
	readonly bStreamed: number
}> {
	let aSeen = 0
	let aHolding: () => void = () => {}
	const holding = new Promise<void>((resolve) => {
		aHolding = resolve
	})
	const [aCommand, aArgs] = printer('a', scene.heldBytes, scene.flagPath)
	const aRun = scene.a.exec(aCommand, aArgs, {
		timeout: 120_000,
		onOutput: (chunk) => {
			aSeen += chunk.data.length
			if (aSeen >= scene.heldBytes) aHolding()
		},
	})
	aRun.catch(() => undefined)
	await holding
	let bStreamed = 0
	const [bCommand, bArgs] = printer('b', scene.floodBytes)
	const b = await scene.b.exec(bCommand, bArgs, {
		timeout: 120_000,
		onOutput: (chunk) => {
			bStreamed += chunk.data.length
		},
	})
	await scene.a.writeFile(scene.flagPath, '')
	const a = await aRun
	return { a, b, bStreamed }
}

/** What every tier's scene must show. */
export function expectBudgetHeld(
	scene: BudgetScene,
	outcome: Awaited<ReturnType<typeof playBudgetScene>>,
): void {
	const { a, b, bStreamed } = outcome
	expect(b.exitCode).toBe(0)
	expect(b.stdout).toBe('b'.repeat(scene.budgetBytes - scene.heldBytes))
	expect(b.stdoutTruncated).toBe(true)
	expect(b.outputTruncation).toEqual({ stdout: 'output-budget' })
	// The budget bounds what is held, not what passes through to onOutput.
	expect(bStreamed).toBe(scene.floodBytes)
	expect(a.stdout).toBe('a'.repeat(scene.heldBytes))
	expect(a.stdoutTruncated).toBe(false)
	expect(a.outputTruncation).toBeUndefined()
}
