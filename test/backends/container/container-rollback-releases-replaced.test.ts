/**
 * The container tier (real runc) with a sized workspace on the copy-on-write volume: a rollback
 * releases the filesystem it replaced before `rollback()` resolves. The container's process starts
 * at `/` and the agent keeps its commands, not itself, in the workspace, so once the rollback ended
 * the commands, the old image is mounted in no namespace and its loop device is gone. Positive
 * control: commands still run in the rolled-back workspace, relative paths resolve there, and the
 * limit holds.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	type ContainerSandboxProvider,
	createContainerSandboxProvider,
} from '../../../src/backends/container/index.js'
import { volumeSandboxDir } from '../../../src/backends/machine/snapshots/snapshot-layout.js'
import type { Sandbox } from '../../../src/index.js'
import {
	deletedLoopsUnder,
	hostMountsOf,
	loopNumbersOf,
	sandboxNamespaceDevices,
} from '../../helpers/replaced-filesystem.js'
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
const LAYOUT = { outputs: { source: { type: 'inImage' } } } as const

function sh(sandbox: Sandbox, script: string, cwd?: string) {
	return sandbox.exec('sh', ['-c', script], cwd === undefined ? {} : { cwd })
}

describe.skipIf(skip !== undefined)(
	`container tier (runc): a sized rollback releases the replaced filesystem${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		let provider: ContainerSandboxProvider
		let stateDir = ''
		beforeAll(async () => {
			stateDir = await makeStateDir('rollback-release')
			provider = createContainerSandboxProvider(
				{ tier: 'container', image: guestImage(), stateDir },
				LAYOUT,
			)
		})
		afterAll(async () => {
			await provider?.close()
			expect(deletedLoopsUnder(`${stateDir}/`)).toEqual([])
			expect(await removeStateDir(stateDir)).toEqual([])
		})

		it('after rollback() the old image is mounted nowhere and its loop device is released; commands run in the rolled-back workspace', async () => {
			const sandbox = await provider.create({ diskLimitMb: 32 })
			try {
				const image = join(volumeSandboxDir(stateDir, sandbox.id), 'workspace.img')
				await sh(sandbox, 'mkdir sub && echo deep > sub/deep.txt && echo v1 > plan.txt')
				const workspace = (await sandbox.exec('pwd')).stdout.trim()
				const checkpoint = await sandbox.checkpoint()
				if (!checkpoint) throw new Error('no checkpoint verb')
				const replaced = loopNumbersOf(image)
				const kept = await sh(sandbox, 'sleep 600 & echo started', 'sub')
				expect(kept.stdout).toContain('started')
				await sh(sandbox, 'rm -rf sub && echo v2 > plan.txt')
				await sandbox.rollback(checkpoint)

				expect(deletedLoopsUnder(`${stateDir}/`)).toEqual([])
				const current = loopNumbersOf(image)
				expect(current).not.toBe(replaced)
				const namespaces = sandboxNamespaceDevices(sandbox.id)
				expect(namespaces.size).toBeGreaterThan(0)
				for (const devices of namespaces.values()) {
					expect(devices.has(current)).toBe(true)
					expect(devices.has(replaced)).toBe(false)
				}
				expect(hostMountsOf(replaced, `${stateDir}/`)).toEqual([])

				expect((await sandbox.exec('pwd')).stdout.trim()).toBe(workspace)
				expect((await sh(sandbox, 'cat plan.txt sub/deep.txt')).stdout).toBe('v1\ndeep\n')
				expect((await sh(sandbox, 'cat deep.txt', 'sub')).stdout).toBe('deep\n')
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
