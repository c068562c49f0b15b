import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLocalSandboxProvider } from '../../../src/backends/local/index.js'
import { createSandboxCgroups } from '../../../src/backends/machine/cgroups/cgroup-limits.js'
import { CgroupLimitsUnavailableError } from '../../../src/backends/machine/index.js'
import type { SandboxProvider } from '../../../src/contract/provider.js'
import { ALLOCATE, FORK } from '../../helpers/limit-attacks.js'
import { bwrapSkipReason } from './bwrap-available.js'
import { cgroupDirsFor, freshStateDir } from './local-test-support.js'

const skip = bwrapSkipReason()

describe.skipIf(skip !== undefined)(
	`limits are enforced with cgroups${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		let provider: SandboxProvider
		let removeState: () => Promise<void>

		beforeAll(async () => {
			const state = await freshStateDir()
			removeState = state.remove
			provider = createLocalSandboxProvider({ tier: 'process', stateDir: state.dir })
		})

		afterAll(async () => {
			await provider?.close()
			await removeState?.()
		})

		it('a process allocating beyond memoryLimitMb is killed, and a smaller one survives', async () => {
			const sandbox = await provider.create({ memoryLimitMb: 160 })
			try {
				const small = await sandbox.exec('node', ['-e', ALLOCATE, '32'])
				expect(small.stdout.trim()).toBe('survived 32')
				const big = await sandbox.exec('node', ['-e', ALLOCATE, '512'])
				expect(big.stdout).not.toContain('survived')
				expect(big.exitCode === 137 || big.signal === 'SIGKILL').toBe(true)
			} finally {
				await sandbox.destroy()
			}
		})

		it('maxProcesses makes forks beyond the limit fail', async () => {
			const sandbox = await provider.create({ maxProcesses: 8 })
			try {
				const result = await sandbox.exec('node', ['-e', FORK, '40'])
				const counts = JSON.parse(result.stdout.trim()) as { ok: number; failed: number }
				expect(counts.failed).toBeGreaterThan(0)
				expect(counts.ok).toBeLessThan(40)
				// A modest number of processes still works.
				const few = await sandbox.exec('sh', ['-c', 'sleep 0.1 & sleep 0.1 & wait; echo ok'])
				expect(few.stdout.trim()).toBe('ok')
			} finally {
				await sandbox.destroy()
			}
		})

		it('removes the sandbox cgroups on destroy', async () => {
			const sandbox = await provider.create({ memoryLimitMb: 256, maxProcesses: 64 })
			const dirs = cgroupDirsFor([sandbox.id])
			expect(dirs.length).toBe(2)
			await sandbox.destroy()
			for (const dir of dirs) expect(existsSync(dir)).toBe(false)
		})
	},
)

describe('limits without a usable controller', () => {
	it('refuse with CgroupLimitsUnavailableError instead of running unlimited', async () => {
		const error = await createSandboxCgroups(
			'namzu-sbx-none',
			{ memoryLimitMb: 64, maxProcesses: 8 },
			{ membership: { v1: {} }, mounts: { v1: {} } },
		).catch((e: unknown) => e)
		expect(error).toBeInstanceOf(CgroupLimitsUnavailableError)
		expect((error as CgroupLimitsUnavailableError).controllers).toEqual(['memory', 'pids'])
	})

	it.skipIf(process.getuid?.() !== 0)(
		'a tracking-only sandbox (no limits, no bubblewrap) still gets a pids group its processes join',
		async () => {
			const cgroups = await createSandboxCgroups(`namzu-sbx-track${process.pid}`, {
				trackOnly: true,
			})
			try {
				expect(cgroups?.procsFiles.some((file) => file.includes('/pids/'))).toBe(true)
				// Positive control: a process joined there is listed as the sandbox's.
				const child = spawn('sleep', ['30'])
				try {
					await cgroups?.join(child.pid ?? 0)
					expect(await cgroups?.pids()).toContain(child.pid)
				} finally {
					child.kill('SIGKILL')
				}
			} finally {
				await cgroups?.remove()
			}
		},
	)

	it('need no cgroup at all when no limit is asked for', async () => {
		await expect(createSandboxCgroups('namzu-sbx-none', {})).resolves.toBeUndefined()
	})
})
