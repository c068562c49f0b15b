/**
 * `diskLimitMb` on the copy-on-write volume, under real bubblewrap sandboxes and a real
 * loop-mounted XFS (reflink=1): the sized workspace's ext4 image lives in the volume, so a
 * checkpoint and a fork clone the image (shared extents, the volume's free space barely moves)
 * while the limit still holds — writes past it fail with ENOSPC inside (with writes under it as the
 * positive control), a fork has its own limit and its writes count against it alone, a rollback
 * restores, the guest cannot reach the image or lift the limit, and nothing is left mounted or
 * attached afterwards. The volume grows online when it must, and is refused by name when the host
 * cannot give it room. A rollback releases the filesystem it replaced before it resolves.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, statSync } from 'node:fs'
import { mkdir, readdir, statfs } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLocalSandboxProvider } from '../../../src/backends/local/index.js'
import { CheckpointSpaceExhaustedError } from '../../../src/backends/machine/cgroups/limit-errors.js'
import { collectLocalGarbage } from '../../../src/backends/machine/claims/reap-leftovers.js'
import {
	attachVolumeUser,
	checkpointCopyMode,
} from '../../../src/backends/machine/snapshots/cow-volume.js'
import {
	CHECKPOINTS_DIR_NAME,
	volumeCheckpointDir,
	volumeMountPath,
	volumeSandboxDir,
} from '../../../src/backends/machine/snapshots/snapshot-layout.js'
import { type Sandbox, type SandboxCheckpoint, SandboxConfigError } from '../../../src/index.js'
import { expectReplacedReleased, loopNumbersOf } from '../../helpers/replaced-filesystem.js'
import { freshStateDir, mountsUnder } from './local-test-support.js'
import {
	loopsUnder,
	type SmallHost,
	sharing,
	smallHostFilesystem,
	smallVolume,
	volumeSkipReason,
} from './volume-test-support.js'

const MIB = 1024 * 1024

const skip = volumeSkipReason()

async function freeBytes(path: string): Promise<number> {
	execFileSync('sync')
	const info = await statfs(path)
	return info.bfree * info.bsize
}

async function sh(sandbox: Sandbox, script: string) {
	return sandbox.exec('sh', ['-c', script])
}

describe.skipIf(skip !== undefined)(
	`diskLimitMb on the copy-on-write volume${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		let state: { dir: string; remove: () => Promise<void> }

		beforeAll(async () => {
			state = await freshStateDir()
		})
		afterAll(async () => {
			await collectLocalGarbage({ stateDir: state.dir }).catch(() => undefined)
			await state.remove()
		})

		it('the sized workspace lives in the volume; writes under the limit work, past it fail with ENOSPC, and the guest cannot lift it', async () => {
			expect((await checkpointCopyMode(state.dir)).mode).toBe('volume')
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir: state.dir })
			try {
				const sandbox = await provider.create({ diskLimitMb: 32 })
				const image = join(volumeSandboxDir(state.dir, sandbox.id), 'workspace.img')
				expect(existsSync(image)).toBe(true)
				expect(statSync(image).size).toBe(32 * MIB)
				// Positive control: well under the limit.
				const under = await sh(sandbox, 'head -c 16777216 /dev/zero > under.bin && echo ok')
				expect(under.stdout).toContain('ok')
				// Attack: past it, by a write, by fallocate, by a sparse file written beyond the end.
				const past = await sh(sandbox, 'head -c 33554432 /dev/zero > past.bin; echo "rc=$?"')
				expect(past.stderr).toMatch(/No space left on device/)
				await sh(sandbox, 'rm -f past.bin')
				const reserve = await sh(sandbox, 'fallocate -l 64M reserved.bin; echo "rc=$?"')
				expect(reserve.stdout).toContain('rc=1')
				const sparse = await sh(
					sandbox,
					'truncate -s 1G sparse.bin && dd if=/dev/zero of=sparse.bin bs=1M count=40 seek=512 conv=notrunc 2>&1; echo "rc=$?"',
				)
				expect(sparse.stdout).toMatch(/No space left on device/)
				// The limit is the filesystem's size: nothing in the sandbox can remount or resize it,
				// change a project id (no quota to escape), or reach the image file.
				const attempts = await sh(
					sandbox,
					[
						'mount -o remount,size=1G "$PWD" 2>/dev/null && echo remounted',
						'chattr -p 7 under.bin 2>/dev/null && echo project-set',
						'ln under.bin /tmp/out 2>/dev/null && echo linked',
						`test -e ${image} && echo image-visible`,
						'df -k . | tail -1',
					].join('; '),
				)
				expect(attempts.stdout).not.toMatch(/remounted|linked|image-visible/)
				const size = Number(attempts.stdout.trim().split('\n').at(-1)?.split(/\s+/)[1])
				expect(size).toBeLessThanOrEqual(32 * 1024)
				// Even a project id set by the host would bound nothing: the filesystem is the bound.
				const after = await sh(sandbox, 'head -c 33554432 /dev/zero > again.bin; echo "rc=$?"')
				expect(after.stderr).toMatch(/No space left on device/)
				await sandbox.destroy()
				expect(existsSync(volumeSandboxDir(state.dir, sandbox.id))).toBe(false)
				expect(mountsUnder(state.dir)).toEqual([])
				expect(loopsUnder(state.dir)).toEqual([])
			} finally {
				await provider.close()
			}
		}, 120_000)

		it('a checkpoint and a fork clone the image; the fork has its own limit; a rollback restores; nothing leaks', async () => {
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir: state.dir })
			try {
				const parent = await provider.create({ diskLimitMb: 64 })
				const seeded = await sh(
					parent,
					'head -c 25165824 /dev/urandom > data.bin && echo v1 > plan.txt && echo ok',
				)
				expect(seeded.stdout).toContain('ok')
				const mount = volumeMountPath(state.dir)
				const before = await freeBytes(mount)
				const checkpoint = await parent.checkpoint()
				if (!checkpoint) throw new Error('no checkpoint verb')
				const stored = join(volumeCheckpointDir(state.dir, checkpoint.id), 'workspace.img')
				expect(sharing(stored).own).toBe(0)
				expect(sharing(stored).shared).toBeGreaterThan(24 * MIB)
				// 24 MiB checkpointed for well under 4 MiB of the volume (metadata only).
				expect(before - (await freeBytes(mount))).toBeLessThan(4 * MIB)

				const fork = await provider.create({ from: checkpoint, diskLimitMb: 64 })
				try {
					const forkImage = join(volumeSandboxDir(state.dir, fork.id), 'workspace.img')
					// A clone: the data shared, only what the fork's mount and chown rewrote its own.
					const forked = sharing(forkImage)
					expect(forked.shared).toBeGreaterThan(24 * MIB)
					expect(forked.own).toBeLessThan(4 * MIB)
					expect((await fork.readFile('plan.txt')).toString()).toBe('v1\n')
					const sums = await Promise.all(
						[parent, fork].map((sandbox) => sh(sandbox, 'sha256sum data.bin')),
					)
					expect(sums[1]?.stdout).toBe(sums[0]?.stdout)
					// The fork owns its files (its own uid) and writes under its limit.
					const owned = await sh(
						fork,
						'echo fork > fork.txt && head -c 16777216 /dev/zero > f.bin && echo ok',
					)
					expect(owned.stdout).toContain('ok')
					// Past its own limit (24 MiB of the parent's + 16 + 32 > 64): ENOSPC.
					const past = await sh(fork, 'head -c 33554432 /dev/zero > g.bin; echo "rc=$?"')
					expect(past.stderr).toMatch(/No space left on device/)
					// The fork's writes count against the fork alone: the parent still has its room.
					const room = await sh(parent, 'head -c 25165824 /dev/zero > p.bin && echo ok')
					expect(room.stdout).toContain('ok')
					expect(await sh(parent, 'test -e fork.txt; echo $?')).toMatchObject({ stdout: '1\n' })
					await fork.destroy()
				} finally {
					await fork.destroy()
				}

				// Rollback: a deletion and a modification undone, the limit still in force.
				await sh(parent, 'rm -f data.bin p.bin && echo v2 > plan.txt')
				await parent.rollback(checkpoint)
				expect((await parent.readFile('plan.txt')).toString()).toBe('v1\n')
				const back = await sh(parent, 'ls; test -e p.bin && echo stale')
				expect(back.stdout).toContain('data.bin')
				expect(back.stdout).not.toContain('stale')
				const still = await sh(parent, 'head -c 67108864 /dev/zero > h.bin; echo "rc=$?"')
				expect(still.stderr).toMatch(/No space left on device/)

				await parent.destroy()
				await provider.deleteCheckpoint(checkpoint.id)
				expect(mountsUnder(state.dir)).toEqual([])
				expect(loopsUnder(state.dir)).toEqual([])
				expect(await readdir(join(state.dir, CHECKPOINTS_DIR_NAME))).toEqual([])
				expect(existsSync(join(state.dir, 'namzu-cow', 'volume.img'))).toBe(false)
			} finally {
				await provider.close()
			}
		}, 180_000)
	},
)

type LocalProvider = ReturnType<typeof createLocalSandboxProvider>

interface SizedParent {
	readonly stateDir: string
	readonly provider: LocalProvider
	readonly parent: Awaited<ReturnType<LocalProvider['create']>>
	readonly checkpoint: SandboxCheckpoint
}

/**
 * A sized parent (`diskLimitMb`) with `dataMib` of random bytes and `plan.txt` (v1), checkpointed,
 * in a fresh state directory; afterwards nothing of it may be left mounted or attached.
 */
function withSizedCheckpoint(
	diskLimitMb: number,
	dataMib: number,
	work: (made: SizedParent) => Promise<void>,
): Promise<void> {
	return inFreshStateDir(async (stateDir) => {
		const provider = createLocalSandboxProvider({ tier: 'process', stateDir })
		try {
			const parent = await provider.create({ diskLimitMb })
			await sh(parent, `head -c ${dataMib * MIB} /dev/urandom > data.bin && echo v1 > plan.txt`)
			const checkpoint = await parent.checkpoint()
			if (!checkpoint) throw new Error('no checkpoint verb')
			await work({ stateDir, provider, parent, checkpoint })
			await parent.destroy()
			await provider.deleteCheckpoint(checkpoint.id)
			expect(mountsUnder(`${stateDir}/`)).toEqual([])
			expect(loopsUnder(`${stateDir}/`)).toEqual([])
		} finally {
			await provider.close()
		}
	})
}

describe.skipIf(skip !== undefined)(
	`forks of a sized checkpoint at the same and another size${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		it(
			'same size and larger start as clones (grown to their own limit), see the checkpoint only, and write invisibly to siblings and the parent',
			() =>
				withSizedCheckpoint(48, 16, async ({ stateDir, provider, parent, checkpoint }) => {
					// Written after the checkpoint: no fork sees it.
					await sh(parent, 'echo late > late.txt && echo v2 > plan.txt')
					const same = await provider.create({ from: checkpoint, diskLimitMb: 48 })
					const large = await provider.create({ from: checkpoint, diskLimitMb: 160 })
					try {
						for (const fork of [same, large]) {
							const image = join(volumeSandboxDir(stateDir, fork.id), 'workspace.img')
							expect(sharing(image).shared).toBeGreaterThan(15 * MIB)
							expect((await fork.readFile('plan.txt')).toString()).toBe('v1\n')
							expect((await sh(fork, 'test -e late.txt; echo $?')).stdout).toBe('1\n')
						}
						const sums = await Promise.all(
							[parent, same, large].map((sandbox) => sh(sandbox, 'sha256sum data.bin')),
						)
						expect(sums[1]?.stdout).toBe(sums[0]?.stdout)
						expect(sums[2]?.stdout).toBe(sums[0]?.stdout)
						const largeImage = join(volumeSandboxDir(stateDir, large.id), 'workspace.img')
						expect(statSync(largeImage).size).toBe(160 * MIB)
						// The grown fork's limit is its own size: 96 MiB more fits, 160 more does not.
						const grown = await sh(large, 'head -c 100663296 /dev/zero > big.bin && echo ok')
						expect(grown.stdout).toContain('ok')
						const past = await sh(large, 'head -c 167772160 /dev/zero > past.bin; echo "rc=$?"')
						expect(past.stderr).toMatch(/No space left on device/)
						// The same-size fork keeps the parent's limit: 48 MiB more does not fit.
						const capped = await sh(same, 'head -c 50331648 /dev/zero > cap.bin; echo "rc=$?"')
						expect(capped.stderr).toMatch(/No space left on device/)
						// A fork's write is invisible to its sibling and to the parent.
						await sh(same, 'echo mine > same.txt')
						for (const other of [parent, large]) {
							expect((await sh(other, 'test -e same.txt; echo $?')).stdout).toBe('1\n')
						}
						expect((await sh(same, 'test -e big.bin; echo $?')).stdout).toBe('1\n')
					} finally {
						await Promise.all([same.destroy(), large.destroy()])
					}
				}),
			180_000,
		)

		it(
			"a rollback swaps in a clone of the checkpoint's image: a deletion undone, the limit in force, the replaced filesystems released at the end",
			() =>
				withSizedCheckpoint(48, 16, async ({ stateDir, provider, parent, checkpoint }) => {
					const sum = (await sh(parent, 'sha256sum data.bin')).stdout
					const image = join(volumeSandboxDir(stateDir, parent.id), 'workspace.img')
					for (let round = 0; round < 2; round++) {
						await sh(
							parent,
							'rm -f data.bin && echo v2 > plan.txt && head -c 8388608 /dev/urandom > new.bin',
						)
						await parent.rollback(checkpoint)
						// The image is a clone of the checkpoint's (its data shared), not a copy into it.
						expect(sharing(image).shared).toBeGreaterThan(15 * MIB)
						expect(sharing(image).own).toBeLessThan(4 * MIB)
						const back = await sh(
							parent,
							'cat plan.txt; test -e new.bin; echo $?; sha256sum data.bin',
						)
						expect(back.stdout).toBe(`v1\n1\n${sum}`)
						expect((await parent.readFile('plan.txt')).toString()).toBe('v1\n')
						// The limit is the swapped-in filesystem's size: past it, by a write or fallocate, fails.
						const past = await sh(parent, 'head -c 41943040 /dev/zero > past.bin; echo "rc=$?"')
						expect(past.stderr).toMatch(/No space left on device/)
						const reserve = await sh(parent, 'rm -f past.bin; fallocate -l 64M r.bin; echo "rc=$?"')
						expect(reserve.stdout).toContain('rc=1')
						const lifted = await sh(
							parent,
							'mount -o remount,rw "$PWD" 2>/dev/null && echo remounted',
						)
						expect(lifted.stdout).not.toContain('remounted')
					}
					// A checkpoint of the rolled-back workspace is still a clone of its image.
					const again = await parent.checkpoint()
					if (!again) throw new Error('no checkpoint verb')
					expect(sharing(join(volumeCheckpointDir(stateDir, again.id), 'workspace.img')).own).toBe(
						0,
					)
					const fork = await provider.create({ from: again, diskLimitMb: 48 })
					expect((await fork.readFile('plan.txt')).toString()).toBe('v1\n')
					await fork.destroy()
					await provider.deleteCheckpoint(again.id)
				}),
			180_000,
		)

		it(
			'after rollback() the replaced image is mounted nowhere and its loop device is released; the agent serves the rolled-back workspace',
			() =>
				withSizedCheckpoint(32, 1, async ({ stateDir, provider, parent }) => {
					const image = join(volumeSandboxDir(stateDir, parent.id), 'workspace.img')
					await sh(parent, 'mkdir sub && echo deep > sub/deep.txt')
					const workspace = (await parent.exec('pwd')).stdout.trim()
					const checkpoint = await parent.checkpoint()
					if (!checkpoint) throw new Error('no checkpoint verb')
					for (let round = 0; round < 2; round++) {
						const replaced = loopNumbersOf(image)
						// A process left running in the workspace: the rollback ends it first.
						const kept = await parent.exec('sh', ['-c', 'sleep 600 & echo started'], { cwd: 'sub' })
						expect(kept.stdout).toContain('started')
						await sh(parent, 'rm -rf sub && echo v2 > plan.txt')
						await parent.rollback(checkpoint)
						// Nothing of the sandbox keeps a working directory in the workspace: released now.
						expectReplacedReleased({ stateDir, sandboxId: parent.id, image, replaced })
						// Positive control: commands run in the rolled-back workspace, paths resolve there.
						expect((await parent.exec('pwd')).stdout.trim()).toBe(workspace)
						expect((await sh(parent, 'cat plan.txt sub/deep.txt')).stdout).toBe('v1\ndeep\n')
						const inSub = await parent.exec('sh', ['-c', 'pwd; cat deep.txt'], { cwd: 'sub' })
						expect(inSub.stdout).toBe(`${workspace}/sub\ndeep\n`)
						expect((await parent.readFile('sub/deep.txt')).toString()).toBe('deep\n')
						expect((await sh(parent, 'pgrep -x sleep; echo "rc=$?"')).stdout).toBe('rc=1\n')
						const past = await sh(parent, 'head -c 41943040 /dev/zero > past.bin; echo "rc=$?"')
						expect(past.stderr).toMatch(/No space left on device/)
						await sh(parent, 'rm -f past.bin')
					}
					await provider.deleteCheckpoint(checkpoint.id)
				}),
			180_000,
		)

		it(
			'a smaller fork is a copy when the files fit, and SandboxConfigError naming diskLimitMb before any copy when they do not',
			() =>
				withSizedCheckpoint(64, 20, async ({ stateDir, provider, parent, checkpoint }) => {
					const refused = await provider.create({ from: checkpoint, diskLimitMb: 16 }).then(
						() => undefined,
						(error: unknown) => error,
					)
					expect(refused).toBeInstanceOf(SandboxConfigError)
					expect(refused).toMatchObject({ field: 'diskLimitMb', received: '16' })
					expect(String((refused as Error).message)).toMatch(/its files use 2\d MiB/)
					const left = await readdir(join(volumeMountPath(stateDir), 'sandboxes'))
					expect(left).toEqual([parent.id])
					// Positive control: a smaller fork the files fit in gets them, under its own limit.
					const small = await provider.create({ from: checkpoint, diskLimitMb: 32 })
					try {
						expect((await small.readFile('plan.txt')).toString()).toBe('v1\n')
						const sums = await Promise.all(
							[parent, small].map((sandbox) => sh(sandbox, 'sha256sum data.bin')),
						)
						expect(sums[1]?.stdout).toBe(sums[0]?.stdout)
						const past = await sh(small, 'head -c 16777216 /dev/zero > past.bin; echo "rc=$?"')
						expect(past.stderr).toMatch(/No space left on device/)
					} finally {
						await small.destroy()
					}
				}),
			180_000,
		)
	},
)

describe.skipIf(skip !== undefined)(
	`a restore's read-only mount left by a dead operation${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		it(
			'gc unmounts it with the volume once no user lives',
			() =>
				inFreshStateDir(async (stateDir) => {
					const provider = createLocalSandboxProvider({ tier: 'process', stateDir })
					try {
						const sandbox = await provider.create({ diskLimitMb: 16 })
						await sandbox.writeFile('kept.txt', 'k')
						const checkpoint = await sandbox.checkpoint()
						if (!checkpoint) throw new Error('no checkpoint verb')
						await sandbox.destroy()
						expect(mountsUnder(`${stateDir}/`)).toEqual([])
						// An operation (pid 999999: gone) mounted the checkpoint's image and died.
						const { volumeBytes } = await checkpointCopyMode(stateDir)
						await attachVolumeUser(stateDir, 'op-999999-deadbeef', volumeBytes ?? 0)
						const left = join(stateDir, 'namzu-cow', 'restore-dead01')
						await mkdir(left)
						const image = join(volumeCheckpointDir(stateDir, checkpoint.id), 'workspace.img')
						execFileSync('mount', ['-o', 'loop,ro', image, left])
						expect(mountsUnder(`${stateDir}/`)).toContain(left)
						await collectLocalGarbage({ stateDir })
						expect(mountsUnder(`${stateDir}/`)).toEqual([])
						expect(loopsUnder(`${stateDir}/`)).toEqual([])
						expect(existsSync(left)).toBe(false)
						// Positive control: the checkpoint itself is intact and forks.
						const fork = await provider.create({ from: checkpoint, diskLimitMb: 16 })
						expect((await fork.readFile('kept.txt')).toString()).toBe('k')
						await fork.destroy()
						await provider.deleteCheckpoint(checkpoint.id)
						expect(mountsUnder(`${stateDir}/`)).toEqual([])
					} finally {
						await provider.close()
					}
				}),
			120_000,
		)
	},
)

/** Runs `work` on a fresh state directory, reaped and removed afterwards. */
async function inFreshStateDir(work: (dir: string) => Promise<void>): Promise<void> {
	const state = await freshStateDir()
	try {
		await work(state.dir)
	} finally {
		await collectLocalGarbage({ stateDir: state.dir }).catch(() => undefined)
		await state.remove()
	}
}

describe.skipIf(skip !== undefined)(
	`growing the copy-on-write volume${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		it(
			'a full volume grows online (sparse image, xfs_growfs) and the checkpoint is taken',
			() =>
				inFreshStateDir(async (stateDir) => {
					const image = await smallVolume(stateDir, 320 * MIB)
					const provider = createLocalSandboxProvider({ tier: 'process', stateDir })
					try {
						const sandbox = await provider.create()
						const filled = await sh(
							sandbox,
							'for i in $(seq 1 300); do echo $i > small-$i; done; head -c 400000000 /dev/urandom > fill 2>/dev/null; sync; head -c 1048576 /dev/urandom > fill2 2>/dev/null; exit 0',
						)
						expect(filled.exitCode).toBe(0)
						const checkpoint = await sandbox.checkpoint()
						expect(checkpoint?.kind).toBe('filesystem')
						expect(statSync(image).size).toBeGreaterThan(320 * MIB)
						const mounted = await statfs(volumeMountPath(stateDir))
						expect(mounted.blocks * mounted.bsize).toBeGreaterThan(400 * MIB)
						await sandbox.destroy()
						if (checkpoint) await provider.deleteCheckpoint(checkpoint.id)
						expect(mountsUnder(stateDir)).toEqual([])
						expect(loopsUnder(stateDir)).toEqual([])
					} finally {
						await provider.close()
					}
				}),
			180_000,
		)

		it(
			'a sized workspace larger than the volume has free grows it first',
			() =>
				inFreshStateDir(async (stateDir) => {
					const image = await smallVolume(stateDir, 320 * MIB)
					const provider = createLocalSandboxProvider({ tier: 'process', stateDir })
					try {
						const sandbox = await provider.create({ diskLimitMb: 512 })
						const inVolume = join(volumeSandboxDir(stateDir, sandbox.id), 'workspace.img')
						expect(existsSync(inVolume)).toBe(true)
						expect(statSync(image).size).toBeGreaterThanOrEqual(512 * MIB)
						await sandbox.destroy()
						expect(mountsUnder(stateDir)).toEqual([])
						expect(loopsUnder(stateDir)).toEqual([])
					} finally {
						await provider.close()
					}
				}),
			120_000,
		)
	},
)

describe.skipIf(skip !== undefined)(
	`a volume the host cannot grow${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		let host: SmallHost
		let stateDir: string
		beforeAll(async () => {
			host = await smallHostFilesystem(1600 * MIB)
			stateDir = host.stateDir
		})
		afterAll(async () => {
			await collectLocalGarbage({ stateDir }).catch(() => undefined)
			await host.remove()
		})

		it('a checkpoint that does not fit and cannot grow is CheckpointSpaceExhaustedError, with no partial checkpoint left', async () => {
			await smallVolume(stateDir, 320 * MIB)
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir })
			try {
				const sandbox = await provider.create()
				expect((await checkpointCopyMode(stateDir)).mode).toBe('volume')
				// The host keeps what the sparse volume may still allocate and 60 MiB more: no room to
				// grow into (a growth is at least 256 MiB, and leaves the host a tenth of its free space).
				const volume = statSync(join(stateDir, 'namzu-cow', 'volume.img'))
				const keep = volume.size - volume.blocks * 512 + 60 * MIB
				const info = await statfs(stateDir)
				execFileSync('fallocate', [
					'-l',
					String(info.bavail * info.bsize - keep),
					join(stateDir, 'filler'),
				])
				const filled = await sh(
					sandbox,
					'for i in $(seq 1 300); do echo $i > small-$i; done; head -c 400000000 /dev/urandom > fill 2>/dev/null; sync; head -c 1048576 /dev/urandom > fill2 2>/dev/null; exit 0',
				)
				expect(filled.exitCode).toBe(0)
				const refused = await sandbox.checkpoint().then(
					() => undefined,
					(error: unknown) => error,
				)
				expect(refused).toBeInstanceOf(CheckpointSpaceExhaustedError)
				expect(refused).toMatchObject({
					reason: 'checkpoint-space-exhausted',
					operation: 'checkpoint',
				})
				expect(await provider.listCheckpoints()).toEqual([])
				expect(await readdir(join(stateDir, CHECKPOINTS_DIR_NAME))).toEqual([])
				expect(await readdir(join(volumeMountPath(stateDir), 'checkpoints'))).toEqual([])
				// Positive control: with space freed, the same sandbox checkpoints.
				await sandbox.exec('rm', ['-f', 'fill', 'fill2'])
				const checkpoint = await sandbox.checkpoint()
				expect(checkpoint?.kind).toBe('filesystem')
				await sandbox.destroy()
				if (checkpoint) await provider.deleteCheckpoint(checkpoint.id)
				expect(mountsUnder(`${stateDir}/`)).toEqual([])
				expect(loopsUnder(`${stateDir}/`)).toEqual([])
			} finally {
				await provider.close()
			}
		}, 180_000)
	},
)
