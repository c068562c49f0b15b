/**
 * The container tier's bounds, each attacked and each with a positive control: memory (an
 * allocation past the limit is killed, a smaller one survives), tasks (a fork bomb stops at
 * `maxProcesses`, a few children still run), CPU (two busy loops are held to the quota on the
 * cgroup usage counter), disk (filling the sized workspace fails with ENOSPC, a small write works).
 */
import { readdirSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	type ContainerSandboxProvider,
	createContainerSandboxProvider,
} from '../../../src/backends/container/index.js'
import { ALLOCATE, FORK } from '../../helpers/limit-attacks.js'
import {
	CRUN_PATH,
	cgroupDirsOf,
	containerSkipReason,
	guestImage,
	makeStateDir,
	RUNC_PATH,
	removeStateDir,
} from './container-test-support.js'

const skip = containerSkipReason()

/** The sandbox's own group in `hierarchy` (the shallowest directory named after it). */
function groupIn(id: string, hierarchy: string): string {
	const dir = cgroupDirsOf(id)
		.filter((candidate) => candidate.startsWith(`/sys/fs/cgroup/${hierarchy}/`))
		.sort((a, b) => a.length - b.length)[0]
	if (dir === undefined) throw new Error(`sandbox ${id} has no ${hierarchy} group`)
	return dir
}

async function readNumber(file: string): Promise<number> {
	return Number((await readFile(file, 'utf8')).trim())
}

function cpuHierarchy(): string {
	return (
		readdirSync('/sys/fs/cgroup').find(
			(name) => name.split(',').includes('cpu') && !name.includes('set'),
		) ?? 'cpu'
	)
}

describe.each(['runc', 'crun'] as const)('container tier limits (%s)', (runtime) => {
	const runtimeSkip = skip ?? containerSkipReason(runtime === 'crun' ? CRUN_PATH : RUNC_PATH)
	if (runtimeSkip !== undefined) {
		it.skip(`skipped: ${runtimeSkip}`, () => undefined)
		return
	}
	let provider: ContainerSandboxProvider
	let stateDir = ''
	beforeAll(async () => {
		stateDir = await makeStateDir('limits')
		provider = createContainerSandboxProvider(
			{ tier: 'container', runtime, image: guestImage(), stateDir },
			{ outputs: { source: { type: 'inImage' } } },
		)
	})
	afterAll(async () => {
		await provider?.close()
		expect(await removeStateDir(stateDir)).toEqual([])
	})

	it('memoryLimitMb: an allocation past the limit is killed, a smaller one survives', async () => {
		const sandbox = await provider.create({ memoryLimitMb: 160 })
		try {
			const small = await sandbox.exec('node', ['-e', ALLOCATE, '32'])
			expect(small.stdout.trim()).toBe('survived 32')
			const big = await sandbox.exec('node', ['-e', ALLOCATE, '512'])
			expect(big.stdout).not.toContain('survived')
			expect(big.exitCode === 137 || big.signal === 'SIGKILL').toBe(true)
			// The agent was not the one killed: the sandbox still serves.
			expect((await sandbox.exec('true')).exitCode).toBe(0)
		} finally {
			await sandbox.destroy()
		}
	})

	it('maxProcesses: a fork bomb stops at the limit, and a few children still run', async () => {
		const sandbox = await provider.create({ maxProcesses: 16 })
		try {
			const bomb = await sandbox.exec('node', ['-e', FORK, '60'])
			const counts = JSON.parse(bomb.stdout.trim()) as { ok: number; failed: number }
			expect(counts.failed).toBeGreaterThan(0)
			expect(counts.ok).toBeLessThan(16)
			const few = await sandbox.exec('sh', ['-c', 'sleep 0.1 & sleep 0.1 & wait; echo ok'])
			expect(few.stdout.trim()).toBe('ok')
		} finally {
			await sandbox.destroy()
		}
	})

	it('cpuLimit: two busy loops are held to the quota on the usage counter', async () => {
		const sandbox = await provider.create({ cpuLimit: 0.5 })
		try {
			const group = groupIn(sandbox.id, cpuHierarchy())
			expect(await readNumber(join(group, 'cpu.cfs_quota_us'))).toBe(50_000)
			const usage = join(groupIn(sandbox.id, 'cpuacct'), 'cpuacct.usage')
			const busy =
				'timeout 2 sh -c "while :; do :; done" & timeout 2 sh -c "while :; do :; done" & wait'
			const before = await readNumber(usage)
			const start = process.hrtime.bigint()
			await sandbox.exec('sh', ['-c', busy])
			const wallNs = Number(process.hrtime.bigint() - start)
			const usedNs = (await readNumber(usage)) - before
			// Two busy loops would take two cores; the quota gives them half of one.
			expect(usedNs).toBeLessThanOrEqual(0.5 * wallNs * 1.2)
			expect(usedNs).toBeGreaterThan(0.5 * wallNs * 0.1)
		} finally {
			await sandbox.destroy()
		}
	})

	it('diskLimitMb: filling the workspace fails with ENOSPC, a small write works', async () => {
		const sandbox = await provider.create({ diskLimitMb: 32 })
		try {
			await sandbox.writeFile('small.txt', 'fits')
			expect((await sandbox.readFile('small.txt')).toString()).toBe('fits')
			const fill = await sandbox.exec('sh', [
				'-c',
				'dd if=/dev/zero of=/workspace/fill bs=1M count=64 2>&1; echo status $?',
			])
			expect(fill.stdout).toMatch(/No space left on device/)
			expect(fill.stdout).toMatch(/status 1/)
			const df = await sandbox.exec('sh', ['-c', 'df -m /workspace | tail -1'])
			expect(Number(df.stdout.trim().split(/\s+/)[1])).toBeLessThanOrEqual(32)
		} finally {
			await sandbox.destroy()
		}
	})
})
