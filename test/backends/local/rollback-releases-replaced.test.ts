/**
 * A sized workspace's rollback (real bubblewrap, real loop devices on the copy-on-write volume)
 * releases the filesystem it replaced before `rollback()` resolves: nothing of the sandbox keeps a
 * working directory in the workspace (bwrap's monitor and its processes inside start at `/`, the
 * agent and its spare shell too, and the rollback ended every command), so the old image is mounted
 * in no namespace and its loop device is gone. Positive control: the agent still serves commands in
 * the workspace, with the checkpoint's files, relative paths resolving there, and the limit held.
 */
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLocalSandboxProvider } from '../../../src/backends/local/index.js'
import { collectLocalGarbage } from '../../../src/backends/machine/claims/reap-leftovers.js'
import { volumeSandboxDir } from '../../../src/backends/machine/snapshots/snapshot-layout.js'
import type { Sandbox } from '../../../src/index.js'
import {
	deletedLoopsUnder,
	hostMountsOf,
	loopNumbersOf,
	sandboxNamespaceDevices,
	sandboxPids,
} from '../../helpers/replaced-filesystem.js'
import { freshStateDir, mountsUnder } from './local-test-support.js'
import { loopsUnder, volumeSkipReason } from './volume-test-support.js'

const skip = volumeSkipReason()

function sh(sandbox: Sandbox, script: string, cwd?: string) {
	return sandbox.exec('sh', ['-c', script], cwd === undefined ? {} : { cwd })
}

describe.skipIf(skip !== undefined)(
	`a sized rollback releases the replaced filesystem${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		let state: { dir: string; remove: () => Promise<void> }
		beforeAll(async () => {
			state = await freshStateDir()
		})
		afterAll(async () => {
			await collectLocalGarbage({ stateDir: state.dir }).catch(() => undefined)
			await state.remove()
		})

		it('after rollback() the old image is mounted nowhere and its loop device is released; the agent serves the rolled-back workspace', async () => {
			const provider = createLocalSandboxProvider({ tier: 'process', stateDir: state.dir })
			try {
				const sandbox = await provider.create({ diskLimitMb: 32 })
				const image = join(volumeSandboxDir(state.dir, sandbox.id), 'workspace.img')
				const seeded = await sh(
					sandbox,
					'mkdir sub && echo deep > sub/deep.txt && echo v1 > plan.txt',
				)
				expect(seeded.exitCode).toBe(0)
				const workspace = (await sandbox.exec('pwd')).stdout.trim()
				const checkpoint = await sandbox.checkpoint()
				if (!checkpoint) throw new Error('no checkpoint verb')
				for (let round = 0; round < 2; round++) {
					const replaced = loopNumbersOf(image)
					// A process left running in the workspace: the rollback ends it first.
					const kept = await sh(sandbox, 'sleep 600 & echo started', 'sub')
					expect(kept.stdout).toContain('started')
					await sh(sandbox, 'rm -rf sub && echo v2 > plan.txt')
					expect(deletedLoopsUnder(state.dir)).toEqual([])
					await sandbox.rollback(checkpoint)

					// The replaced image: attached nowhere, mounted in no namespace of the sandbox nor the host.
					expect(deletedLoopsUnder(state.dir)).toEqual([])
					expect(loopsUnder(state.dir).filter((file) => file === image)).toHaveLength(1)
					const current = loopNumbersOf(image)
					expect(current).not.toBe(replaced)
					const namespaces = sandboxNamespaceDevices(sandbox.id)
					// Positive control for the look: the sandbox's namespace has the new filesystem.
					expect(namespaces.size).toBeGreaterThan(0)
					for (const devices of namespaces.values()) {
						expect(devices.has(current)).toBe(true)
						expect(devices.has(replaced)).toBe(false)
					}
					expect(hostMountsOf(replaced, `${state.dir}/`)).toEqual([])
					expect(hostMountsOf(current, `${state.dir}/`)).toHaveLength(1)
					expect(sandboxPids(sandbox.id).length).toBeGreaterThan(0)

					// The agent serves the rolled-back workspace: its files, relative paths, the limit.
					expect((await sandbox.exec('pwd')).stdout.trim()).toBe(workspace)
					expect((await sh(sandbox, 'cat plan.txt sub/deep.txt')).stdout).toBe('v1\ndeep\n')
					expect((await sh(sandbox, 'pwd; cat deep.txt', 'sub')).stdout).toBe(
						`${workspace}/sub\ndeep\n`,
					)
					expect((await sandbox.readFile('sub/deep.txt')).toString()).toBe('deep\n')
					expect((await sh(sandbox, 'pgrep -x sleep; echo "rc=$?"')).stdout).toBe('rc=1\n')
					const past = await sh(sandbox, 'head -c 41943040 /dev/zero > past.bin; echo "rc=$?"')
					expect(past.stderr).toMatch(/No space left on device/)
					await sh(sandbox, 'rm -f past.bin')
				}
				await sandbox.destroy()
				await provider.deleteCheckpoint(checkpoint.id)
				expect(mountsUnder(`${state.dir}/`).filter((path) => path.includes('/sandboxes/'))).toEqual(
					[],
				)
				expect(loopsUnder(`${state.dir}/`).filter((file) => file.includes('/sandboxes/'))).toEqual(
					[],
				)
			} finally {
				await provider.close()
			}
		}, 180_000)
	},
)
