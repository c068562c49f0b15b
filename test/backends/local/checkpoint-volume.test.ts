/**
 * The copy-on-write volume on a real loop-mounted XFS (reflink=1) under real bubblewrap sandboxes:
 * a checkpoint shares the workspace's extents instead of copying bytes (the filesystem's own
 * accounting: `xfs_io fiemap` shared flags and free space, with a plain write as the positive
 * control), a write in a fork changes neither the checkpoint nor the parent, the volume is
 * unmounted (its loop device gone) after its last user and its image removed with the last
 * checkpoint, and a killed host's volume is unmounted by gc. A full volume's growth and refusal:
 * `checkpoint-sized.test.ts`.
 */
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { readdir, statfs } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLocalSandboxProvider } from '../../../src/backends/local/index.js'
import { collectLocalGarbage } from '../../../src/backends/machine/claims/reap-leftovers.js'
import { checkpointCopyMode } from '../../../src/backends/machine/snapshots/cow-volume.js'
import {
	volumeCheckpointDir,
	volumeMountPath,
} from '../../../src/backends/machine/snapshots/snapshot-layout.js'
import { bundleSource, type SourceBundle } from '../../helpers/bundle-source.js'
import { crashHostAfterCreate, freshStateDir, mountsUnder } from './local-test-support.js'
import {
	extentFlags,
	FIEMAP_SHARED_FLAG,
	loopsUnder,
	volumeSkipReason,
} from './volume-test-support.js'

const MIB = 1024 * 1024
const FIEMAP_SHARED = FIEMAP_SHARED_FLAG

const skip = volumeSkipReason()

async function freeBytes(path: string): Promise<number> {
	const info = await statfs(path)
	return info.bfree * info.bsize
}

function sha(path: string): string {
	return createHash('sha256').update(readFileSync(path)).digest('hex')
}

function workspaceOf(stateDir: string, id: string): string {
	return join(stateDir, `namzu-sbx-${id}`, 'workspace')
}

describe.skipIf(skip !== undefined)(
	`checkpoints on the copy-on-write volume${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		let state: { dir: string; remove: () => Promise<void> }
		let library: SourceBundle

		beforeAll(async () => {
			state = await freshStateDir()
			library = await bundleSource('src/backends/local/index.ts', 'cow-volume')
		}, 120_000)
		afterAll(async () => {
			await collectLocalGarbage({ stateDir: state.dir }).catch(() => undefined)
			await state.remove()
			await library?.remove()
		})

		it('an ext4 state directory uses the volume; a checkpoint shares extents instead of copying bytes', async () => {
			expect((await checkpointCopyMode(state.dir)).mode).toBe('volume')
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir: state.dir })
			try {
				const parent = await provider.create()
				const wrote = await parent.exec('sh', ['-c', 'head -c 67108864 /dev/urandom > big.bin'])
				expect(wrote.exitCode).toBe(0)
				const mount = volumeMountPath(state.dir)
				expect(mountsUnder(state.dir)).toEqual(
					expect.arrayContaining([mount, workspaceOf(state.dir, parent.id)]),
				)
				execFileSync('sync')
				const before = await freeBytes(mount)
				const checkpoint = await parent.checkpoint()
				if (!checkpoint) throw new Error('no checkpoint verb')
				execFileSync('sync')
				const after = await freeBytes(mount)
				const stored = join(volumeCheckpointDir(state.dir, checkpoint.id), 'big.bin')
				const flags = extentFlags(stored)
				expect(flags.length).toBeGreaterThan(0)
				expect(flags.every((flag) => (flag & FIEMAP_SHARED) !== 0)).toBe(true)
				// 64 MiB checkpointed, well under 8 MiB of the volume used (metadata only).
				expect(before - after).toBeLessThan(8 * MIB)
				// Positive control: as many bytes written (not cloned: coreutils' cat would clone through
				// copy_file_range) cost their size and are not shared.
				const copied = await parent.exec('sh', ['-c', 'head -c 67108864 /dev/urandom > copy.bin'])
				expect(copied.exitCode).toBe(0)
				execFileSync('sync')
				expect(after - (await freeBytes(mount))).toBeGreaterThan(60 * MIB)
				const own = extentFlags(join(workspaceOf(state.dir, parent.id), 'copy.bin'))
				expect(own.some((flag) => (flag & FIEMAP_SHARED) === 0)).toBe(true)
				await parent.destroy()
				await provider.deleteCheckpoint(checkpoint.id)
			} finally {
				await provider.close()
			}
		})

		it('a write in a fork changes neither the checkpoint nor the parent', async () => {
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir: state.dir })
			try {
				const parent = await provider.create()
				await parent.exec('sh', ['-c', 'head -c 8388608 /dev/urandom > data.bin'])
				const checkpoint = await parent.checkpoint()
				if (!checkpoint) throw new Error('no checkpoint verb')
				const stored = join(volumeCheckpointDir(state.dir, checkpoint.id), 'data.bin')
				const original = sha(stored)
				const fork = await provider.create({ from: checkpoint })
				const forked = join(workspaceOf(state.dir, fork.id), 'data.bin')
				// The fork's copy is a clone too, before anyone writes.
				expect(extentFlags(forked).every((flag) => (flag & FIEMAP_SHARED) !== 0)).toBe(true)
				expect(sha(forked)).toBe(original)
				// Overwrite in place (no truncation): the shared blocks must be copied on write.
				const written = await fork.exec('sh', [
					'-c',
					'head -c 4096 /dev/zero | dd of=data.bin bs=4096 count=1 conv=notrunc 2>/dev/null',
				])
				expect(written.exitCode).toBe(0)
				expect(sha(forked)).not.toBe(original)
				expect(sha(stored)).toBe(original)
				expect(sha(join(workspaceOf(state.dir, parent.id), 'data.bin'))).toBe(original)
				await Promise.all([fork.destroy(), parent.destroy()])
				await provider.deleteCheckpoint(checkpoint.id)
			} finally {
				await provider.close()
			}
		})

		it('the last user out unmounts the volume and its loop device; the last checkpoint deleted removes the image', async () => {
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir: state.dir })
			const mount = volumeMountPath(state.dir)
			const image = join(state.dir, 'namzu-cow', 'volume.img')
			try {
				const [a, b] = await Promise.all([provider.create(), provider.create()])
				await a.writeFile('a.txt', 'a')
				const checkpoint = await a.checkpoint()
				if (!checkpoint) throw new Error('no checkpoint verb')
				await a.destroy()
				// b still uses it: mounted (positive control).
				expect(mountsUnder(state.dir)).toContain(mount)
				expect(loopsUnder(state.dir)).toEqual([image])
				await b.destroy()
				expect(mountsUnder(state.dir)).toEqual([])
				expect(loopsUnder(state.dir)).toEqual([])
				// The checkpoint at rest keeps the image, not a mount; a fork mounts it again.
				expect(existsSync(image)).toBe(true)
				const fork = await provider.create({ from: checkpoint })
				expect((await fork.readFile('a.txt')).toString()).toBe('a')
				await fork.destroy()
				expect(mountsUnder(state.dir)).toEqual([])
				await provider.deleteCheckpoint(checkpoint.id)
				expect(existsSync(image)).toBe(false)
				expect(mountsUnder(state.dir)).toEqual([])
				expect(loopsUnder(state.dir)).toEqual([])
			} finally {
				await provider.close()
			}
		})

		it('gc unmounts the volume of a SIGKILLed host and leaves nothing of it', async () => {
			const { id } = await crashHostAfterCreate(
				library,
				state.dir,
				"sandbox = await provider.create(); await sandbox.writeFile('x.txt', 'x')",
			)
			expect(mountsUnder(state.dir)).toEqual(
				expect.arrayContaining([volumeMountPath(state.dir), workspaceOf(state.dir, id)]),
			)
			const report = await collectLocalGarbage({ stateDir: state.dir })
			expect(report.sandboxes.map((sandbox) => sandbox.id)).toEqual([id])
			expect(mountsUnder(state.dir)).toEqual([])
			expect(loopsUnder(state.dir)).toEqual([])
			expect(existsSync(join(state.dir, 'namzu-cow', 'volume.img'))).toBe(false)
			expect(await readdir(join(state.dir, 'namzu-cow', 'users'))).toEqual([])
		}, 120_000)
	},
)
