/**
 * A capture whose host was killed leaves `namzu-checkpoints/.partial-<id>/`: the reaper (what
 * `namzu-sandbox gc` runs) removes it once the capturing process it records is dead, and never
 * while that process lives (positive control: a real capture in progress, paused, keeps its partial
 * directory through a reaper run).
 */
import { spawn } from 'node:child_process'
import { cp, mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { readProcessIdentity } from '../../../src/backends/machine/claims/process-identity.js'
import { collectLocalGarbage } from '../../../src/backends/machine/claims/reap-leftovers.js'
import {
	CHECKPOINTS_DIR_NAME,
	captureCheckpoint,
	listCheckpoints,
} from '../../../src/backends/machine/snapshots/checkpoint-store.js'
import { freshStateDir } from './local-test-support.js'

/** The identity of a process that ran and is gone (reaped, so its pid names nothing now). */
async function deadIdentity(): Promise<{ pid: number; startTime: string }> {
	const child = spawn('sleep', ['30'], { stdio: 'ignore' })
	const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
	const identity = child.pid === undefined ? undefined : await readProcessIdentity(child.pid)
	child.kill('SIGKILL')
	await exited
	if (!identity) throw new Error('no identity for the child')
	return identity
}

describe('partial checkpoints of dead captures are reaped', () => {
	let state: { dir: string; remove: () => Promise<void> }
	let workspace: string

	beforeEach(async () => {
		state = await freshStateDir()
		workspace = join(state.dir, 'ws')
		await mkdir(workspace)
		await writeFile(join(workspace, 'a.txt'), 'a')
	})
	afterEach(async () => {
		await state.remove()
	})

	it('a live capture keeps its partial directory; once its capturer is dead, gc removes it', async () => {
		const store = join(state.dir, CHECKPOINTS_DIR_NAME)
		let during: { partials: string[]; reaped: readonly string[]; capturer: string } | undefined
		const checkpoint = await captureCheckpoint({
			stateBase: state.dir,
			sandboxId: 'sbx',
			workspace,
			pause: async () => {
				const partials = (await readdir(store)).filter((name) => name.startsWith('.partial-'))
				const report = await collectLocalGarbage({ stateDir: state.dir })
				const [first] = partials
				const capturer = first ? await readFile(join(store, first, 'capturer.json'), 'utf8') : ''
				// A copy of the live partial, as a killed host would have left it, for the second half.
				if (first)
					await cp(join(store, first), join(store, '.partial-0123456789abcdef'), {
						recursive: true,
					})
				during = { partials, reaped: report.partialCheckpoints, capturer }
				return async () => undefined
			},
		})
		// Positive control: the live capture's partial stayed and the capture completed.
		expect(during?.partials).toHaveLength(1)
		expect(during?.reaped).toEqual([])
		expect(JSON.parse(during?.capturer ?? '{}')).toMatchObject({ pid: process.pid })
		expect((await listCheckpoints(state.dir)).map((c) => c.id)).toEqual([checkpoint.id])
		expect(await readdir(join(store, checkpoint.id))).not.toContain('capturer.json')

		// The copy still names this (live) process: gc leaves it.
		const left = join(store, '.partial-0123456789abcdef')
		expect((await collectLocalGarbage({ stateDir: state.dir })).partialCheckpoints).toEqual([])
		expect(await readdir(store)).toContain('.partial-0123456789abcdef')

		// Its capturer dead: a dry run names it and keeps it, gc removes it, the checkpoint stays.
		await writeFile(join(left, 'capturer.json'), JSON.stringify(await deadIdentity()))
		const dry = await collectLocalGarbage({ stateDir: state.dir, dryRun: true })
		expect(dry.partialCheckpoints).toEqual([expect.stringContaining('.partial-0123456789abcdef')])
		expect(await readdir(store)).toContain('.partial-0123456789abcdef')
		const report = await collectLocalGarbage({ stateDir: state.dir })
		expect(report.partialCheckpoints).toEqual([
			expect.stringContaining('.partial-0123456789abcdef'),
		])
		expect((await readdir(store)).sort()).toEqual([checkpoint.id])
	})
})
