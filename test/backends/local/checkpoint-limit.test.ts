/**
 * The bound on the checkpoints a local provider keeps (`backend.maxCheckpoints`): past it a capture
 * is refused with `CheckpointLimitError` before any capture work (nothing new in the store, not
 * even a partial directory); deleting one lets the next capture succeed (positive control). A
 * value that is not a positive integer is refused by name at construction.
 */
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	createLocalSandboxProvider,
	type LocalSandboxProvider,
} from '../../../src/backends/local/index.js'
import { CHECKPOINTS_DIR_NAME } from '../../../src/backends/machine/snapshots/checkpoint-store.js'
import { CheckpointLimitError, SandboxConfigError } from '../../../src/index.js'
import { DEFAULT_MAX_CHECKPOINTS } from '../../../src/local-entry.js'
import { bwrapSkipReason } from './bwrap-available.js'
import { freshStateDir } from './local-test-support.js'

const skip = bwrapSkipReason()
const LIMIT = 2

describe('backend.maxCheckpoints', () => {
	it.each([[0], [-1], [1.5], ['3'], [null]])('refuses %j by name', (maxCheckpoints) => {
		expect(() =>
			createLocalSandboxProvider({
				tier: 'process',
				maxCheckpoints: maxCheckpoints as unknown as number,
			}),
		).toThrow(SandboxConfigError)
		expect(() =>
			createLocalSandboxProvider({
				tier: 'process',
				maxCheckpoints: maxCheckpoints as unknown as number,
			}),
		).toThrow(/backend\.maxCheckpoints/)
	})

	it('defaults to DEFAULT_MAX_CHECKPOINTS (256)', () => {
		expect(DEFAULT_MAX_CHECKPOINTS).toBe(256)
	})
})

describe.skipIf(skip !== undefined)(
	`a local provider with maxCheckpoints ${LIMIT}${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		let provider: LocalSandboxProvider | undefined
		let state: { dir: string; remove: () => Promise<void> } | undefined
		beforeAll(async () => {
			state = await freshStateDir()
			provider = createLocalSandboxProvider({
				tier: 'process',
				stateDir: state.dir,
				maxCheckpoints: LIMIT,
			})
		})
		afterAll(async () => {
			await provider?.close()
			await state?.remove()
		})

		it('refuses the capture past the limit before any work; a delete makes room', async () => {
			if (!provider || !state) throw new Error('no provider')
			const sandbox = await provider.create()
			try {
				await sandbox.writeFile('a.txt', 'a')
				const first = await sandbox.checkpoint({ label: 'one' })
				await sandbox.checkpoint({ label: 'two' })
				const store = join(state.dir, CHECKPOINTS_DIR_NAME)
				const before = await readdir(store)
				const refused = sandbox.checkpoint({ label: 'three' })
				await expect(refused).rejects.toBeInstanceOf(CheckpointLimitError)
				await expect(refused).rejects.toMatchObject({ reason: 'checkpoint-limit', limit: LIMIT })
				await expect(refused).rejects.toThrow(/deleteCheckpoint/)
				expect(await readdir(store)).toEqual(before)
				expect(await provider.listCheckpoints()).toHaveLength(LIMIT)
				// Positive control: deleting one lets the next capture succeed.
				await provider.deleteCheckpoint(first.id)
				const third = await sandbox.checkpoint({ label: 'three' })
				expect(third.label).toBe('three')
				expect((await provider.listCheckpoints()).map((entry) => entry.label)).toEqual([
					'two',
					'three',
				])
				for (const entry of await provider.listCheckpoints()) {
					await provider.deleteCheckpoint(entry.id)
				}
			} finally {
				await sandbox.destroy()
			}
		})
	},
)
