/**
 * A mount namespace made elsewhere on the host while a sandbox's sized workspace (and the
 * copy-on-write volume under it) was mounted holds a private copy of those mounts, which no
 * unmount on the host reaches. Real bubblewrap sandboxes, a real `unshare --mount` process: a
 * rollback still releases the filesystem it replaced before it resolves, and a destroy still
 * leaves no loop device attached, while the foreign process runs on undisturbed.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { readFileSync, readlinkSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLocalSandboxProvider } from '../../../src/backends/local/index.js'
import { collectLocalGarbage } from '../../../src/backends/machine/claims/reap-leftovers.js'
import { volumeSandboxDir } from '../../../src/backends/machine/snapshots/snapshot-layout.js'
import {
	deletedLoopsUnder,
	expectReplacedReleased,
	loopNumbersOf,
} from '../../helpers/replaced-filesystem.js'
import { freshStateDir, mountsUnder } from './local-test-support.js'
import { loopsUnder, volumeSkipReason } from './volume-test-support.js'

const skip = volumeSkipReason()

/** A process in a mount namespace of its own, copied from the host's as it is now. */
async function foreignNamespace(): Promise<{ child: ChildProcess; pid: number }> {
	const own = readlinkSync('/proc/self/ns/mnt')
	const child = spawn('unshare', ['--mount', '--', 'sleep', '600'], { stdio: 'ignore' })
	const pid = child.pid
	if (pid === undefined) throw new Error('unshare did not start')
	for (;;) {
		const namespace = (() => {
			try {
				return readlinkSync(`/proc/${pid}/ns/mnt`)
			} catch {
				return own
			}
		})()
		if (namespace !== own && readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'sleep') break
		await new Promise((resolve) => setTimeout(resolve, 10))
	}
	return { child, pid }
}

/** The mount points under `prefix` in `pid`'s namespace. */
function mountsOf(pid: number, prefix: string): string[] {
	return readFileSync(`/proc/${pid}/mountinfo`, 'utf8')
		.split('\n')
		.map((line) => line.split(' ')[4] ?? '')
		.filter((mountPoint) => mountPoint.startsWith(prefix))
}

describe.skipIf(skip !== undefined)(
	`a foreign mount namespace's copy of a sandbox's mounts${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		let state: { dir: string; remove: () => Promise<void> }
		beforeAll(async () => {
			state = await freshStateDir()
		})
		afterAll(async () => {
			await collectLocalGarbage({ stateDir: state.dir }).catch(() => undefined)
			await state.remove()
		})

		it('neither keeps the image a rollback replaced nor a destroyed workspace attached; the foreign process runs on', async () => {
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir: state.dir })
			let foreign: { child: ChildProcess; pid: number } | undefined
			try {
				const sandbox = await provider.create({ diskLimitMb: 32 })
				const image = join(volumeSandboxDir(state.dir, sandbox.id), 'workspace.img')
				await sandbox.exec('sh', ['-c', 'echo v1 > plan.txt'])
				const checkpoint = await sandbox.checkpoint()
				if (!checkpoint) throw new Error('no checkpoint verb')
				const replaced = loopNumbersOf(image)
				foreign = await foreignNamespace()
				// The copy is there: the foreign namespace holds the workspace and the volume.
				expect(mountsOf(foreign.pid, `${state.dir}/`).length).toBeGreaterThanOrEqual(2)
				await sandbox.exec('sh', ['-c', 'echo v2 > plan.txt'])
				await sandbox.rollback(checkpoint)
				expectReplacedReleased({ stateDir: state.dir, sandboxId: sandbox.id, image, replaced })
				expect((await sandbox.readFile('plan.txt')).toString()).toBe('v1\n')

				await sandbox.destroy()
				await provider.deleteCheckpoint(checkpoint.id)
				expect(mountsUnder(`${state.dir}/`)).toEqual([])
				expect(loopsUnder(`${state.dir}/`)).toEqual([])
				expect(deletedLoopsUnder(`${state.dir}/`)).toEqual([])
				expect(mountsOf(foreign.pid, `${state.dir}/`)).toEqual([])
				// Positive control: the foreign process was left alone, in its own namespace.
				expect(readFileSync(`/proc/${foreign.pid}/comm`, 'utf8').trim()).toBe('sleep')
				expect(mountsOf(foreign.pid, '/proc').length).toBeGreaterThan(0)
			} finally {
				foreign?.child.kill('SIGKILL')
				await provider.close()
			}
		}, 120_000)
	},
)
