/**
 * `onRestore` on the local tier (real bubblewrap, real cgroups): the hook runs on the fork (it can
 * exec in it) before `create({ from })` resolves; a hook that throws fails the create with
 * `CheckpointRestoreHookError` (the throw as its cause) and leaves nothing of the fork — no state
 * directory, cgroup or process, and no kept-alive listing; a rollback's hook sees the rolled-back
 * workspace, and when it throws the sandbox stays, rolled back and usable.
 */
import { describe, expect, it } from 'vitest'
import type { SandboxRestoreContext } from '../../../src/contract-entry.js'
import { CheckpointRestoreHookError, SandboxArgumentError } from '../../../src/index.js'
import { bwrapSkipReason } from './bwrap-available.js'
import {
	allCgroupDirsFor,
	processesMentioning,
	stateDirIds,
	useLocalProvider,
} from './local-test-support.js'

const skip = bwrapSkipReason()

/** What `pending` rejected with (undefined when it resolved). */
function rejectionOf(pending: Promise<unknown>): Promise<unknown> {
	return pending.then(
		() => undefined,
		(caught: unknown) => caught,
	)
}

describe.skipIf(skip !== undefined)(
	`onRestore on the local tier${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		const file = useLocalProvider()

		it('runs on the fork, which it can exec in, before create resolves', async () => {
			const parent = await file.provider.create()
			try {
				await parent.writeFile('plan.txt', 'as checkpointed')
				const checkpoint = await parent.checkpoint({ label: 'hooked' })
				let resolved = false
				const seen: { id: string; stdout: string; context: SandboxRestoreContext }[] = []
				const creating = file.provider.create({
					from: checkpoint,
					onRestore: async (sandbox, context) => {
						const result = await sandbox.exec('cat', ['plan.txt'])
						seen.push({ id: sandbox.id, stdout: result.stdout, context })
						expect(resolved).toBe(false)
					},
				})
				void creating.then(() => {
					resolved = true
				})
				const fork = await creating
				try {
					expect(seen).toHaveLength(1)
					expect(seen[0]?.id).toBe(fork.id)
					expect(seen[0]?.stdout).toBe('as checkpointed')
					expect(seen[0]?.context.operation).toBe('fork')
					expect(seen[0]?.context.checkpoint).toEqual(checkpoint)
					expect(fork.status).not.toBe('destroyed')
				} finally {
					await fork.destroy()
				}
				await file.provider.deleteCheckpoint(checkpoint.id)
			} finally {
				await parent.destroy()
			}
		})

		it('a throwing hook rejects CheckpointRestoreHookError and leaves nothing of the fork', async () => {
			const parent = await file.provider.create()
			try {
				await parent.writeFile('plan.txt', 'x')
				const checkpoint = await parent.checkpoint()
				const thrown = new Error('re-keying failed')
				let forkId: string | undefined
				const before = (await file.provider.list()).map((entry) => entry.id)
				const error = await rejectionOf(
					file.provider.create({
						from: checkpoint.id,
						keepAlive: true,
						keepAliveMs: 60_000,
						onRestore: (sandbox) => {
							forkId = sandbox.id
							throw thrown
						},
					}),
				)
				expect(error).toBeInstanceOf(CheckpointRestoreHookError)
				expect(error).toMatchObject({
					reason: 'restore-hook-failed',
					operation: 'fork',
					checkpointId: checkpoint.id,
					sandboxId: forkId,
					cause: thrown,
				})
				if (forkId === undefined) throw new Error('the hook never ran')
				const id = forkId
				// The provider's own listing, the state directory, cgroups and processes: all gone.
				expect((await file.provider.list()).map((entry) => entry.id)).toEqual(before)
				expect(stateDirIds(file.stateDir)).not.toContain(id)
				expect(allCgroupDirsFor(id)).toEqual([])
				expect(processesMentioning(`namzu-sbx-${id}`)).toEqual([])
				// The parent is untouched (positive control: the hook failure was the fork's only).
				expect((await parent.exec('cat', ['plan.txt'])).stdout).toBe('x')
				expect(stateDirIds(file.stateDir)).toContain(parent.id)
				await file.provider.deleteCheckpoint(checkpoint.id)
			} finally {
				await parent.destroy()
			}
		})

		it("a rollback's hook sees the restored workspace; when it throws the sandbox stays", async () => {
			const sandbox = await file.provider.create()
			try {
				await sandbox.writeFile('state.txt', 'checkpointed')
				const checkpoint = await sandbox.checkpoint()
				await sandbox.writeFile('state.txt', 'later')
				const seen: string[] = []
				await sandbox.rollback(checkpoint, {
					onRestore: async (restored, context) => {
						expect(restored.id).toBe(sandbox.id)
						expect(context).toEqual({ checkpoint, operation: 'rollback' })
						seen.push((await restored.exec('cat', ['state.txt'])).stdout)
					},
				})
				expect(seen).toEqual(['checkpointed'])

				await sandbox.writeFile('state.txt', 'later again')
				const thrown = new Error('hook refused')
				const error = await rejectionOf(
					sandbox.rollback(checkpoint.id, {
						onRestore: () => {
							throw thrown
						},
					}),
				)
				expect(error).toBeInstanceOf(CheckpointRestoreHookError)
				expect(error).toMatchObject({
					operation: 'rollback',
					sandboxId: sandbox.id,
					cause: thrown,
				})
				expect(sandbox.status).not.toBe('destroyed')
				expect((await sandbox.exec('cat', ['state.txt'])).stdout).toBe('checkpointed')
				await file.provider.deleteCheckpoint(checkpoint.id)
			} finally {
				await sandbox.destroy()
			}
		})

		it('a rollback refuses an onRestore that is not a function, naming it, before any work', async () => {
			const sandbox = await file.provider.create()
			try {
				await sandbox.writeFile('state.txt', 'checkpointed')
				const checkpoint = await sandbox.checkpoint()
				await sandbox.writeFile('state.txt', 'after')
				const refused = sandbox.rollback(checkpoint, {
					onRestore: 'not a function' as unknown as () => void,
				})
				await expect(refused).rejects.toBeInstanceOf(SandboxArgumentError)
				await expect(refused).rejects.toThrow(/options\.onRestore/)
				expect((await sandbox.exec('cat', ['state.txt'])).stdout).toBe('after')
				await file.provider.deleteCheckpoint(checkpoint.id)
			} finally {
				await sandbox.destroy()
			}
		})
	},
)
