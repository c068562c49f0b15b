/**
 * Filesystem checkpoints on the local tier (real bubblewrap, real cgroups): a fork starts from the
 * checkpoint and nothing written after it, forks and parent never see each other's writes, a
 * rollback undoes a deletion and a modification and ends what ran, the store outlives the provider
 * object, `deleteCheckpoint` removes the files, an abort leaves no partial checkpoint and the
 * sandbox thawed, and `diskLimitMb` still bounds a fork.
 */
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createLocalSandboxProvider } from '../../../src/backends/local/index.js'
import { CHECKPOINTS_DIR_NAME } from '../../../src/backends/machine/snapshots/checkpoint-store.js'
import { CheckpointNotFoundError, CheckpointUnsupportedError } from '../../../src/index.js'
import { bwrapSkipReason } from './bwrap-available.js'
import { useLocalProvider } from './local-test-support.js'

const skip = bwrapSkipReason()

async function text(sandbox: { readFile(path: string): Promise<Buffer> }, path: string) {
	return (await sandbox.readFile(path)).toString()
}

describe.skipIf(skip !== undefined)(
	`local tier checkpoints${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		const file = useLocalProvider()

		it('declares filesystem checkpoints', () => {
			expect(file.provider.checkpointKinds).toEqual(['filesystem'])
		})

		it('a fork sees the files as of the checkpoint; forks and parent never see each other', async () => {
			const parent = await file.provider.create()
			try {
				await parent.writeFile('plan.txt', 'v1')
				const checkpoint = await parent.checkpoint({ label: 'before' })
				if (!checkpoint) throw new Error('no checkpoint verb')
				expect(checkpoint).toMatchObject({
					kind: 'filesystem',
					sandboxId: parent.id,
					label: 'before',
				})
				expect(checkpoint.bytes).toBeGreaterThan(0)
				await parent.writeFile('plan.txt', 'v2')
				await parent.writeFile('after.txt', 'later')
				const [a, b] = await Promise.all([
					file.provider.create({ from: checkpoint }),
					file.provider.create({ from: checkpoint.id }),
				])
				try {
					expect(a.id).not.toBe(parent.id)
					expect(await text(a, 'plan.txt')).toBe('v1')
					expect(await a.exists?.('after.txt')).toBe(false)
					await a.writeFile('plan.txt', 'a')
					await a.writeFile('only-a.txt', 'a')
					expect(await text(b, 'plan.txt')).toBe('v1')
					expect(await b.exists?.('only-a.txt')).toBe(false)
					expect(await text(parent, 'plan.txt')).toBe('v2')
					expect(await parent.exists?.('only-a.txt')).toBe(false)
					// The fork's workload writes as its own uid (positive control of ownership).
					const touched = await b.exec('touch', ['plan.txt', 'new.txt'])
					expect(touched.exitCode).toBe(0)
				} finally {
					await Promise.all([a.destroy(), b.destroy()])
				}
			} finally {
				await parent.destroy()
			}
		})

		it('rollback undoes a deletion and a modification and ends running processes', async () => {
			const sandbox = await file.provider.create()
			try {
				await sandbox.writeFile('keep.txt', 'original')
				await sandbox.writeFile('dir/nested.txt', 'nested')
				const checkpoint = await sandbox.checkpoint()
				if (!checkpoint) throw new Error('no checkpoint verb')
				await sandbox.writeFile('keep.txt', 'changed')
				await sandbox.remove?.('dir', { recursive: true })
				await sandbox.writeFile('extra.txt', 'x')
				const sleeper = await sandbox.spawn?.('sleep', ['300'])
				await sandbox.rollback(checkpoint)
				expect(await text(sandbox, 'keep.txt')).toBe('original')
				expect(await text(sandbox, 'dir/nested.txt')).toBe('nested')
				expect(await sandbox.exists?.('extra.txt')).toBe(false)
				const ended = await sleeper?.wait()
				expect(ended?.exitCode).not.toBe(0)
				// The sandbox still works after the rollback (positive control).
				const echoed = await sandbox.exec('cat', ['keep.txt'])
				expect(echoed.stdout).toBe('original')
			} finally {
				await sandbox.destroy()
			}
		})

		it('a memory checkpoint and an unknown id are refused by name, nothing created', async () => {
			const sandbox = await file.provider.create()
			try {
				const before = await file.provider.listCheckpoints()
				await expect(sandbox.checkpoint({ kind: 'memory' })).rejects.toBeInstanceOf(
					CheckpointUnsupportedError,
				)
				expect(await file.provider.listCheckpoints()).toEqual(before)
				await expect(sandbox.rollback('0000000000000000')).rejects.toBeInstanceOf(
					CheckpointNotFoundError,
				)
				await expect(file.provider.create({ from: 'ffffffffffffffff' })).rejects.toBeInstanceOf(
					CheckpointNotFoundError,
				)
			} finally {
				await sandbox.destroy()
			}
		})

		it('checkpoints outlive the provider object; deleteCheckpoint removes their files', async () => {
			const sandbox = await file.provider.create()
			const checkpoint = await sandbox.checkpoint({ label: 'kept' })
			await sandbox.destroy()
			if (!checkpoint) throw new Error('no checkpoint verb')
			const other = createLocalSandboxProvider({ tier: 'process', stateDir: file.stateDir })
			try {
				const listed = await other.listCheckpoints()
				expect(listed?.map((entry) => entry.id)).toContain(checkpoint.id)
				await other.deleteCheckpoint(checkpoint.id)
				const store = await readdir(join(file.stateDir, CHECKPOINTS_DIR_NAME))
				expect(store.filter((name) => name.includes(checkpoint.id))).toEqual([])
				await expect(other.deleteCheckpoint(checkpoint.id)).rejects.toBeInstanceOf(
					CheckpointNotFoundError,
				)
			} finally {
				await other.close()
			}
		})

		it('a kept-alive sandbox reopened by another provider object checkpoints and rolls back', async () => {
			const created = await file.provider.create({ keepAlive: true, keepAliveMs: 60_000 })
			const other = createLocalSandboxProvider({ tier: 'process', stateDir: file.stateDir })
			const reopened = await other.open(created.id)
			try {
				await reopened.writeFile('notes.txt', 'kept')
				const checkpoint = await reopened.checkpoint({ label: 'reopened' })
				expect(checkpoint.sandboxId).toBe(created.id)
				await reopened.writeFile('notes.txt', 'changed')
				await reopened.rollback(checkpoint)
				expect(await text(reopened, 'notes.txt')).toBe('kept')
				await other.deleteCheckpoint(checkpoint.id)
			} finally {
				await reopened.destroy()
				await other.close()
			}
		})

		it('an aborted checkpoint leaves nothing and the sandbox thawed', async () => {
			const sandbox = await file.provider.create()
			try {
				await sandbox.exec('dd', ['if=/dev/urandom', 'of=big', 'bs=1M', 'count=64'])
				const before = await file.provider.listCheckpoints()
				const controller = new AbortController()
				const taking = sandbox.checkpoint({ signal: controller.signal })
				setTimeout(() => controller.abort(new Error('stop')), 5)
				await expect(taking).rejects.toThrow()
				expect(await file.provider.listCheckpoints()).toEqual(before)
				const store = await readdir(join(file.stateDir, CHECKPOINTS_DIR_NAME))
				expect(store.filter((name) => name.startsWith('.partial-'))).toEqual([])
				const alive = await sandbox.exec('echo', ['thawed'])
				expect(alive.stdout.trim()).toBe('thawed')
			} finally {
				await sandbox.destroy()
			}
		})
	},
)

describe.skipIf(skip !== undefined || process.getuid?.() !== 0)(
	'a fork of a sized workspace keeps its diskLimitMb',
	() => {
		const file = useLocalProvider()

		it("writes past the fork's limit fail with ENOSPC", async () => {
			const parent = await file.provider.create({ diskLimitMb: 32 })
			try {
				await parent.writeFile('seed.txt', 'seed')
				const checkpoint = await parent.checkpoint()
				if (!checkpoint) throw new Error('no checkpoint verb')
				const fork = await file.provider.create({ from: checkpoint, diskLimitMb: 32 })
				try {
					expect(await text(fork, 'seed.txt')).toBe('seed')
					const past = await fork.exec('dd', ['if=/dev/zero', 'of=past', 'bs=1M', 'count=64'])
					expect(past.stderr).toContain('No space left on device')
				} finally {
					await fork.destroy()
				}
			} finally {
				await parent.destroy()
			}
		})
	},
)
