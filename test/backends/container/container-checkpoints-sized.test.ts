/**
 * `diskLimitMb` on the container tier (real runc) with its state directory's copy-on-write volume:
 * the sized workspace's image lives in the volume, writes past the limit fail with ENOSPC inside
 * (writes under it work), a checkpoint clones the image, a fork of the same or a larger size starts
 * from a clone of it with the parent's files and its own limit, a rollback swaps the workspace's
 * image for a clone of the checkpoint's (the replaced filesystem released before it resolves), and
 * nothing is left mounted or attached.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	type ContainerSandboxProvider,
	createContainerSandboxProvider,
} from '../../../src/backends/container/index.js'
import { checkpointCopyMode } from '../../../src/backends/machine/snapshots/cow-volume.js'
import { volumeSandboxDir } from '../../../src/backends/machine/snapshots/snapshot-layout.js'
import type { Sandbox } from '../../../src/index.js'
import { expectReplacedReleased, loopNumbersOf } from '../../helpers/replaced-filesystem.js'
import { sharing } from '../local/volume-test-support.js'
import {
	containerSkipReason,
	guestImage,
	makeStateDir,
	removeStateDir,
} from './container-test-support.js'

const skip =
	containerSkipReason() ??
	(process.getuid?.() === 0 && existsSync('/usr/sbin/mkfs.xfs')
		? undefined
		: 'needs a root host with xfsprogs')
const MIB = 1024 * 1024
const LAYOUT = { outputs: { source: { type: 'inImage' } } } as const

function mountsUnder(prefix: string): string[] {
	return execFileSync('cat', ['/proc/self/mountinfo'], { encoding: 'utf8' })
		.split('\n')
		.map((line) => line.split(' ')[4] ?? '')
		.filter((mountPoint) => mountPoint.startsWith(prefix))
}

function loopsUnder(dir: string): string[] {
	const run = spawnSync('losetup', ['--list', '--noheadings', '--output', 'BACK-FILE'], {
		encoding: 'utf8',
	})
	return run.stdout
		.split('\n')
		.map((line) => line.trim())
		.filter((line) => line.startsWith(dir))
}

function sh(sandbox: Sandbox, script: string) {
	return sandbox.exec('sh', ['-c', script])
}

describe.skipIf(skip !== undefined)(
	`container tier (runc): diskLimitMb on the copy-on-write volume${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		let provider: ContainerSandboxProvider
		let stateDir = ''
		beforeAll(async () => {
			stateDir = await makeStateDir('checkpoints-sized')
			provider = createContainerSandboxProvider(
				{ tier: 'container', image: guestImage(), stateDir },
				LAYOUT,
			)
		})
		afterAll(async () => {
			await provider?.close()
			expect(mountsUnder(`${stateDir}/`)).toEqual([])
			expect(loopsUnder(`${stateDir}/`)).toEqual([])
			expect(await removeStateDir(stateDir)).toEqual([])
		})

		it('the limit holds in the parent and in a fork of the same size; checkpoint and fork clone the image; rollback restores', async () => {
			expect((await checkpointCopyMode(stateDir)).mode).toBe('volume')
			const parent = await provider.create({ diskLimitMb: 48 })
			try {
				expect(existsSync(join(volumeSandboxDir(stateDir, parent.id), 'workspace.img'))).toBe(true)
				// Positive control, then the attack: past the limit.
				const under = await sh(
					parent,
					'head -c 16777216 /dev/zero > data.bin && echo v1 > plan.txt && echo ok',
				)
				expect(under.stdout).toContain('ok')
				const past = await sh(parent, 'head -c 41943040 /dev/zero > past.bin; echo "rc=$?"')
				expect(past.stderr).toMatch(/No space left on device/)
				await sh(parent, 'rm -f past.bin')

				const checkpoint = await parent.checkpoint()
				if (!checkpoint) throw new Error('no checkpoint verb')
				const fork = await provider.create({ from: checkpoint, diskLimitMb: 48 })
				try {
					expect(existsSync(join(volumeSandboxDir(stateDir, fork.id), 'workspace.img'))).toBe(true)
					expect((await sh(fork, 'cat plan.txt')).stdout).toBe('v1\n')
					const mine = await sh(
						fork,
						'echo fork > fork.txt && head -c 8388608 /dev/zero > f.bin && echo ok',
					)
					expect(mine.stdout).toContain('ok')
					const forkPast = await sh(fork, 'head -c 41943040 /dev/zero > g.bin; echo "rc=$?"')
					expect(forkPast.stderr).toMatch(/No space left on device/)
					// The fork's writes are its own: the parent sees none and keeps its room.
					expect((await sh(parent, 'test -e fork.txt; echo $?')).stdout).toBe('1\n')
					const room = await sh(parent, 'head -c 16777216 /dev/zero > p.bin && echo ok')
					expect(room.stdout).toContain('ok')
					// A larger fork starts from a clone grown to its own size: the checkpoint's files,
					// none of its sibling's or the parent's later writes, and its own larger limit.
					const large = await provider.create({ from: checkpoint, diskLimitMb: 96 })
					try {
						const image = join(volumeSandboxDir(stateDir, large.id), 'workspace.img')
						expect(statSync(image).size).toBe(96 * MIB)
						const seen = await sh(
							large,
							'cat plan.txt; test -e fork.txt; echo $?; test -e p.bin; echo $?',
						)
						expect(seen.stdout).toBe('v1\n1\n1\n')
						const grown = await sh(large, 'head -c 62914560 /dev/zero > big.bin && echo ok')
						expect(grown.stdout).toContain('ok')
						const largePast = await sh(large, 'head -c 41943040 /dev/zero > h.bin; echo "rc=$?"')
						expect(largePast.stderr).toMatch(/No space left on device/)
						for (const other of [parent, fork]) {
							expect((await sh(other, 'test -e big.bin; echo $?')).stdout).toBe('1\n')
						}
					} finally {
						await large.destroy()
					}
				} finally {
					await fork.destroy()
				}

				await sh(parent, 'rm -f data.bin p.bin && echo v2 > plan.txt')
				await parent.rollback(checkpoint)
				// Swapped, not copied: the workspace's image shares the checkpoint's data.
				const image = join(volumeSandboxDir(stateDir, parent.id), 'workspace.img')
				expect(sharing(image).shared).toBeGreaterThan(12 * MIB)
				expect((await sh(parent, 'cat plan.txt')).stdout).toBe('v1\n')
				const stillPast = await sh(parent, 'head -c 41943040 /dev/zero > q.bin; echo "rc=$?"')
				expect(stillPast.stderr).toMatch(/No space left on device/)
				await sh(parent, 'rm -f q.bin')
				expect((await sh(parent, 'ls')).stdout).toContain('data.bin')
				expect((await sh(parent, 'test -e p.bin; echo $?')).stdout).toBe('1\n')
				await provider.deleteCheckpoint(checkpoint.id)
			} finally {
				await parent.destroy()
			}
		}, 240_000)

		it('after rollback() the replaced image is mounted nowhere and its loop device is released; commands run in the rolled-back workspace', async () => {
			const sandbox = await provider.create({ diskLimitMb: 32 })
			try {
				const image = join(volumeSandboxDir(stateDir, sandbox.id), 'workspace.img')
				await sh(sandbox, 'mkdir sub && echo deep > sub/deep.txt && echo v1 > plan.txt')
				const workspace = (await sandbox.exec('pwd')).stdout.trim()
				const checkpoint = await sandbox.checkpoint()
				if (!checkpoint) throw new Error('no checkpoint verb')
				const replaced = loopNumbersOf(image)
				// A process left running in the workspace: the rollback ends it first.
				const kept = await sandbox.exec('sh', ['-c', 'sleep 600 & echo started'], { cwd: 'sub' })
				expect(kept.stdout).toContain('started')
				await sh(sandbox, 'rm -rf sub && echo v2 > plan.txt')
				await sandbox.rollback(checkpoint)
				// The container's process starts at /, the agent keeps only its commands in the workspace.
				expectReplacedReleased({ stateDir, sandboxId: sandbox.id, image, replaced })
				// Positive control: commands run in the rolled-back workspace, paths resolve there.
				expect((await sandbox.exec('pwd')).stdout.trim()).toBe(workspace)
				expect((await sh(sandbox, 'cat plan.txt sub/deep.txt')).stdout).toBe('v1\ndeep\n')
				const inSub = await sandbox.exec('sh', ['-c', 'cat deep.txt'], { cwd: 'sub' })
				expect(inSub.stdout).toBe('deep\n')
				expect((await sandbox.readFile('sub/deep.txt')).toString()).toBe('deep\n')
				const past = await sh(sandbox, 'head -c 41943040 /dev/zero > past.bin; echo "rc=$?"')
				expect(past.stderr).toMatch(/No space left on device/)
				await provider.deleteCheckpoint(checkpoint.id)
			} finally {
				await sandbox.destroy()
			}
		}, 240_000)
	},
)
