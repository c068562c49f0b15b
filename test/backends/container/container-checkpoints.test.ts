/**
 * Filesystem checkpoints on the container tier (real runc): the same machine-layer engine as the
 * local tier, behind the container's glue. A fork starts from the checkpoint and not what came
 * after, forks and parent never share a write, a rollback undoes a deletion and a modification,
 * the store outlives the provider object; gVisor (runsc) takes the filesystem kind too (its page
 * cache flushed first); its memory kind is container-checkpoints-runsc-memory.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	type ContainerSandboxProvider,
	createContainerSandboxProvider,
} from '../../../src/backends/container/index.js'
import { SandboxArgumentError } from '../../../src/index.js'
import {
	containerSkipReason,
	guestImage,
	makeStateDir,
	RUNSC_PATH,
	removeStateDir,
} from './container-test-support.js'

const skip = containerSkipReason()
const LAYOUT = { outputs: { source: { type: 'inImage' } } } as const

async function text(sandbox: { readFile(path: string): Promise<Buffer> }, path: string) {
	return (await sandbox.readFile(path)).toString()
}

const runscSkip = containerSkipReason(RUNSC_PATH)

describe.skipIf(runscSkip !== undefined)('gVisor (runsc): filesystem checkpoints', () => {
	let provider: ContainerSandboxProvider
	let stateDir = ''
	beforeAll(async () => {
		stateDir = await makeStateDir('checkpoints-runsc')
		provider = createContainerSandboxProvider(
			{ tier: 'container', image: guestImage(), stateDir, runtime: 'runsc' },
			LAYOUT,
		)
	})
	afterAll(async () => {
		await provider?.close()
		expect(await removeStateDir(stateDir)).toEqual([])
	})

	it('declares filesystem and memory (container-checkpoints-runsc-memory.test.ts); an unknown kind is refused by name before anything is done', async () => {
		expect(provider.checkpointKinds).toEqual(['filesystem', 'memory'])
		const sandbox = await provider.create()
		try {
			await sandbox.writeFile('kept.txt', 'k')
			await expect(sandbox.checkpoint({ kind: 'everything' as 'memory' })).rejects.toBeInstanceOf(
				SandboxArgumentError,
			)
			expect(await provider.listCheckpoints()).toEqual([])
			expect(await text(sandbox, 'kept.txt')).toBe('k')
		} finally {
			await sandbox.destroy()
		}
	})

	it('a fork sees what the workload wrote (unsynced) before the checkpoint and nothing after; forks and parent share no write; rollback undoes a deletion', async () => {
		const parent = await provider.create()
		try {
			// Written inside gVisor without fsync: in the sentry's page cache until the flush.
			await parent.exec('sh', ['-c', 'echo v1 > plan.txt; echo here > gone.txt'])
			const checkpoint = await parent.checkpoint({ label: 'runsc' })
			await parent.exec('sh', ['-c', 'echo v2 > plan.txt; rm gone.txt; echo late > late.txt'])
			const [a, b] = await Promise.all([
				provider.create({ from: checkpoint }),
				provider.create({ from: checkpoint.id }),
			])
			try {
				expect((await a.exec('cat', ['plan.txt'])).stdout).toBe('v1\n')
				expect(await a.exists?.('late.txt')).toBe(false)
				await a.writeFile('only-a.txt', 'a')
				expect(await b.exists?.('only-a.txt')).toBe(false)
				expect(await parent.exists?.('only-a.txt')).toBe(false)
			} finally {
				await Promise.all([a.destroy(), b.destroy()])
			}
			await parent.rollback(checkpoint)
			expect((await parent.exec('cat', ['gone.txt', 'plan.txt'])).stdout).toBe('here\nv1\n')
			expect(await parent.exists?.('late.txt')).toBe(false)
			await provider.deleteCheckpoint(checkpoint.id)
			expect(await provider.listCheckpoints()).toEqual([])
		} finally {
			await parent.destroy()
		}
	})
})

describe.skipIf(skip !== undefined)('container tier checkpoints (runc)', () => {
	let provider: ContainerSandboxProvider
	let stateDir = ''
	beforeAll(async () => {
		stateDir = await makeStateDir('checkpoints')
		provider = createContainerSandboxProvider(
			{ tier: 'container', image: guestImage(), stateDir },
			LAYOUT,
		)
	})
	afterAll(async () => {
		await provider?.close()
		expect(await removeStateDir(stateDir)).toEqual([])
	})

	it('declares filesystem checkpoints', () => {
		expect(provider.checkpointKinds).toEqual(['filesystem'])
	})

	it('fork and rollback: files as of the checkpoint, no write shared between forks and parent', async () => {
		const parent = await provider.create()
		try {
			await parent.writeFile('plan.txt', 'v1')
			await parent.writeFile('gone.txt', 'here')
			const checkpoint = await parent.checkpoint({ label: 'c' })
			if (!checkpoint) throw new Error('no checkpoint verb')
			await parent.writeFile('plan.txt', 'v2')
			await parent.exec('rm', ['gone.txt'])
			const [a, b] = await Promise.all([
				provider.create({ from: checkpoint }),
				provider.create({ from: checkpoint.id }),
			])
			try {
				expect(await text(a, 'plan.txt')).toBe('v1')
				await a.writeFile('only-a.txt', 'a')
				expect(await b.exists?.('only-a.txt')).toBe(false)
				expect(await parent.exists?.('only-a.txt')).toBe(false)
				const touched = await b.exec('touch', ['plan.txt'])
				expect(touched.exitCode).toBe(0)
			} finally {
				await Promise.all([a.destroy(), b.destroy()])
			}
			await parent.rollback(checkpoint)
			expect(await text(parent, 'plan.txt')).toBe('v1')
			expect(await text(parent, 'gone.txt')).toBe('here')
			expect((await parent.exec('cat', ['plan.txt'])).stdout).toBe('v1')
			const other = createContainerSandboxProvider(
				{ tier: 'container', image: guestImage(), stateDir },
				LAYOUT,
			)
			try {
				const listed = await other.listCheckpoints()
				expect(listed?.map((entry) => entry.id)).toContain(checkpoint.id)
				await other.deleteCheckpoint(checkpoint.id)
				expect(await provider.listCheckpoints()).toEqual([])
			} finally {
				await other.close()
			}
		} finally {
			await parent.destroy()
		}
	})
})
