/**
 * Per-exec accounting on the local tier, from each command's own cgroups (v1 memory and cpuacct
 * counting groups beside its freezer group here, `cpu.stat` / `memory.peak` on v2): a command that
 * works and allocates reports its CPU time and peak memory, and one the OOM killer takes under a
 * small limit says `oomKilled: true` while the sandbox serves on (the positive control).
 */
import { describe, expect, it } from 'vitest'
import { bwrapSkipReason } from './bwrap-available.js'
import { ALLOCATE_AND_SPIN, useLocalProvider } from './local-test-support.js'

const skip = bwrapSkipReason()
const MIB = 1024 * 1024

const WORK = ALLOCATE_AND_SPIN

describe.skipIf(skip !== undefined)('exec accounting (local tier)', () => {
	const file = useLocalProvider()

	it("reports the command's CPU time and peak memory, not the OOM killer", async () => {
		const sandbox = await file.provider.create({ memoryLimitMb: 512 })
		try {
			const result = await sandbox.exec('python3', ['-c', WORK, '64'], { timeout: 120_000 })
			expect(result.stdout).toBe('done\n')
			expect(result.oomKilled).toBe(false)
			expect(typeof result.cpuUserMs).toBe('number')
			expect(typeof result.cpuSystemMs).toBe('number')
			// 0.2 s of process time was spent, so the two together cannot be zero.
			expect((result.cpuUserMs ?? 0) + (result.cpuSystemMs ?? 0)).toBeGreaterThan(0)
			expect(result.peakMemoryBytes ?? 0).toBeGreaterThanOrEqual(64 * MIB)
		} finally {
			await sandbox.destroy()
		}
	})

	it('says oomKilled: true for a command the OOM killer takes, and the sandbox serves on', async () => {
		const sandbox = await file.provider.create({ memoryLimitMb: 64 })
		try {
			const result = await sandbox.exec('python3', ['-c', WORK, '256'], { timeout: 120_000 })
			expect(result).toMatchObject({ oomKilled: true, signal: 'SIGKILL', exitCode: -1 })
			const next = await sandbox.exec('echo', ['still here'])
			expect(next.stdout).toBe('still here\n')
			expect(next.oomKilled, 'each command counts only its own tree').toBe(false)
		} finally {
			await sandbox.destroy()
		}
	})
})
