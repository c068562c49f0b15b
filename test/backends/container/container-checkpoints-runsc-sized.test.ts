/**
 * gVisor (real runsc) memory checkpoints on the state directory's copy-on-write volume: the
 * workspace's files are cloned, not copied (into the volume, or the sized workspace's image), and
 * `diskLimitMb` holds through a memory checkpoint, a fork and a rollback — a write past the limit
 * fails inside each, while the files and a running counter carry on (the positive controls). A
 * memory checkpoint whose workspace files do not fit the volume grows it and takes them again;
 * where the host has no room to grow it, the checkpoint is refused by name, nothing of it is left,
 * and the sandbox carries on from its image.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, statSync } from 'node:fs'
import { readdir, statfs } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
	type ContainerSandbox,
	type ContainerSandboxProvider,
	createContainerSandboxProvider,
} from '../../../src/backends/container/index.js'
import { CheckpointSpaceExhaustedError } from '../../../src/backends/machine/cgroups/limit-errors.js'
import { checkpointCopyMode } from '../../../src/backends/machine/snapshots/cow-volume.js'
import {
	volumeCheckpointDir,
	volumeSandboxDir,
} from '../../../src/backends/machine/snapshots/snapshot-layout.js'
import { smallHostFilesystem, smallVolume } from '../local/volume-test-support.js'
import {
	COUNTER,
	containerSkipReason,
	counterOf,
	counterPasses,
	guestImage,
	makeStateDir,
	mountsMentioning,
	RUNSC_PATH,
	removeStateDir,
} from './container-test-support.js'

const skip =
	containerSkipReason(RUNSC_PATH) ??
	(existsSync('/usr/sbin/mkfs.xfs') ? undefined : 'needs xfsprogs for the copy-on-write volume')
const LAYOUT = { outputs: { source: { type: 'inImage' } } } as const
const CASE_MS = 240_000
const LIMIT_MB = 48
/** 40 MiB on top of the 16 MiB already there: past a 48 MiB filesystem. */
const PAST_LIMIT = 'head -c 41943040 /dev/zero > past.bin; echo "rc=$?"; rm -f past.bin'

function sh(sandbox: ContainerSandbox, script: string) {
	return sandbox.exec('sh', ['-c', script])
}

/** The write past the limit fails inside, and one under it works (its control). */
async function expectLimitHolds(sandbox: ContainerSandbox): Promise<void> {
	expect((await sh(sandbox, 'head -c 4194304 /dev/zero > small.bin && echo ok')).stdout).toBe(
		'ok\n',
	)
	expect((await sh(sandbox, PAST_LIMIT)).stderr).toMatch(/No space left on device/)
}

interface RunscCase {
	provider: ContainerSandboxProvider
	stateDir: string
}

/** A runsc provider on a fresh state directory (`prepare` runs first); closed and checked after. */
function useRunscProvider(label: string, prepare?: (stateDir: string) => Promise<void>): RunscCase {
	const made = { stateDir: '' } as RunscCase
	beforeAll(async () => {
		made.stateDir = await makeStateDir(label)
		await prepare?.(made.stateDir)
		made.provider = createContainerSandboxProvider(
			{ tier: 'container', image: guestImage(), stateDir: made.stateDir, runtime: 'runsc' },
			LAYOUT,
		)
	})
	afterAll(async () => {
		await made.provider?.close()
		expect(mountsMentioning(made.stateDir)).toEqual([])
		expect(await removeStateDir(made.stateDir)).toEqual([])
	})
	return made
}

describe.skipIf(skip !== undefined)(
	`gVisor (runsc): memory checkpoints on the copy-on-write volume${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		const made = useRunscProvider('checkpoints-runsc-sized')

		it(
			'diskLimitMb holds through a memory checkpoint, a fork of the same size and a rollback; files and a running counter carry on',
			async () => {
				expect((await checkpointCopyMode(made.stateDir)).mode).toBe('volume')
				const parent = await made.provider.create({ diskLimitMb: LIMIT_MB })
				const forks: ContainerSandbox[] = []
				try {
					const under = await sh(
						parent,
						'head -c 16777216 /dev/zero > data.bin && echo v1 > plan.txt',
					)
					expect(under.exitCode).toBe(0)
					await expectLimitHolds(parent)
					await parent.startDetached({ sessionId: 'counter', command: 'sh', args: ['-c', COUNTER] })
					await counterPasses(parent, 3)
					const checkpoint = await parent.checkpoint({ kind: 'memory' })
					expect(checkpoint).toMatchObject({ kind: 'memory' })
					// The sized workspace's image was cloned into the volume, not its files copied.
					const taken = join(volumeCheckpointDir(made.stateDir, checkpoint.id), 'workspace.img')
					expect(existsSync(taken)).toBe(true)
					await sh(parent, 'echo v2 > plan.txt && rm data.bin')

					const fork = await made.provider.create({ from: checkpoint, diskLimitMb: LIMIT_MB })
					forks.push(fork)
					expect(existsSync(join(volumeSandboxDir(made.stateDir, fork.id), 'workspace.img'))).toBe(
						true,
					)
					// Positive controls: the checkpoint's files, and the counter restored, not restarted.
					expect((await sh(fork, 'cat plan.txt')).stdout).toBe('v1\n')
					expect((await sh(fork, 'ls')).stdout).toContain('data.bin')
					const first = await counterOf(fork)
					expect(first).toBeGreaterThan(3)
					await counterPasses(fork, first)
					await expectLimitHolds(fork)
					await sh(fork, 'echo fork > fork.txt')
					expect((await sh(parent, 'test -e fork.txt; echo $?')).stdout).toBe('1\n')

					await parent.rollback(checkpoint)
					expect((await sh(parent, 'cat plan.txt')).stdout).toBe('v1\n')
					expect((await sh(parent, 'ls')).stdout).toContain('data.bin')
					await counterPasses(parent, await counterOf(parent))
					await expectLimitHolds(parent)
					await made.provider.deleteCheckpoint(checkpoint.id)
					expect(existsSync(taken)).toBe(false)
				} finally {
					await Promise.all(forks.map((fork) => fork.destroy()))
					await parent.destroy()
				}
			},
			CASE_MS,
		)

		it(
			"an unsized workspace's files are cloned into the volume by a memory checkpoint; a fork sees them",
			async () => {
				const parent = await made.provider.create()
				try {
					await parent.writeFile('plan.txt', 'v1')
					const checkpoint = await parent.checkpoint({ kind: 'memory' })
					const taken = volumeCheckpointDir(made.stateDir, checkpoint.id)
					expect(existsSync(join(taken, 'plan.txt'))).toBe(true)
					expect(
						existsSync(join(made.stateDir, 'namzu-checkpoints', checkpoint.id, 'content')),
					).toBe(false)
					const fork = await made.provider.create({ from: checkpoint })
					try {
						expect((await fork.exec('cat', ['plan.txt'])).stdout).toBe('v1')
					} finally {
						await fork.destroy()
					}
					await made.provider.deleteCheckpoint(checkpoint.id)
					expect(existsSync(taken)).toBe(false)
				} finally {
					await parent.destroy()
				}
			},
			CASE_MS,
		)
	},
)

/** A counter in the sandbox's memory (gVisor's own /tmp): only a memory restore carries it on. */
const MEMORY_COUNTER = 'i=0; while :; do echo $i > /tmp/counter; i=$((i+1)); sleep 0.05; done'
/** Fills the volume the workspace lives in: many small files, then a file until ENOSPC. */
const FILL_VOLUME =
	'for i in $(seq 1 300); do echo $i > small-$i; done; head -c 400000000 /dev/urandom > fill 2>/dev/null; sync; head -c 1048576 /dev/urandom > fill2 2>/dev/null; exit 0'
const MIB = 1024 * 1024

async function memoryCounter(sandbox: ContainerSandbox): Promise<number> {
	const value = Number.parseInt((await sh(sandbox, 'cat /tmp/counter')).stdout, 10)
	return Number.isSafeInteger(value) ? value : -1
}

async function memoryCounterPasses(sandbox: ContainerSandbox, after: number): Promise<void> {
	const deadline = Date.now() + 60_000
	while ((await memoryCounter(sandbox)) <= after) {
		if (Date.now() > deadline) throw new Error(`the counter never passed ${after}`)
		await new Promise((resolve) => setTimeout(resolve, 50))
	}
}

describe.skipIf(skip !== undefined)(
	`gVisor (runsc): a memory checkpoint that fills the volume${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		// A small pre-made volume (the provider uses the image it finds) that the files fill.
		const made = useRunscProvider('runsc-volume-growth', async (stateDir) => {
			await smallVolume(stateDir, 320 * MIB)
		})

		it(
			'the volume grows online and the capture is taken again; the sandbox and a fork carry on',
			async () => {
				const parent = await made.provider.create()
				try {
					await parent.startDetached({
						sessionId: 'counter',
						command: 'sh',
						args: ['-c', MEMORY_COUNTER],
					})
					await memoryCounterPasses(parent, 3)
					expect((await sh(parent, FILL_VOLUME)).exitCode).toBe(0)
					const checkpoint = await parent.checkpoint({ kind: 'memory' })
					expect(checkpoint).toMatchObject({ kind: 'memory' })
					expect(statSync(join(made.stateDir, 'namzu-cow', 'volume.img')).size).toBeGreaterThan(
						320 * MIB,
					)
					const taken = volumeCheckpointDir(made.stateDir, checkpoint.id)
					expect(existsSync(join(taken, 'small-300'))).toBe(true)
					// The sandbox went on from its image: the counter in its memory carries on.
					await memoryCounterPasses(parent, await memoryCounter(parent))
					const fork = await made.provider.create({ from: checkpoint })
					try {
						expect((await sh(fork, 'cat small-7')).stdout).toBe('7\n')
						const first = await memoryCounter(fork)
						expect(first).toBeGreaterThan(3)
						await memoryCounterPasses(fork, first)
					} finally {
						await fork.destroy()
					}
					await made.provider.deleteCheckpoint(checkpoint.id)
				} finally {
					await parent.destroy()
				}
			},
			CASE_MS,
		)
	},
)

describe.skipIf(skip !== undefined)(
	`gVisor (runsc): a memory checkpoint the host cannot grow the volume for${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		it(
			'is CheckpointSpaceExhaustedError with no checkpoint left, and the sandbox carries on',
			async () => {
				// The state directory on a small host filesystem of its own, so it can be filled.
				const host = await smallHostFilesystem(1600 * MIB)
				const { stateDir } = host
				const provider = createContainerSandboxProvider(
					{ tier: 'container', image: guestImage(), stateDir, runtime: 'runsc' },
					LAYOUT,
				)
				try {
					const volume = await smallVolume(stateDir, 320 * MIB)
					const sandbox = await provider.create()
					const session = { sessionId: 'counter', command: 'sh', args: ['-c', MEMORY_COUNTER] }
					await sandbox.startDetached(session)
					// The host keeps what the sparse volume may still allocate and 60 MiB more: no room
					// for a growth (at least 256 MiB, leaving the host a tenth of what it has free).
					const made = statSync(volume)
					const info = await statfs(stateDir)
					const keep = made.size - made.blocks * 512 + 60 * MIB
					execFileSync('fallocate', [
						'-l',
						String(info.bavail * info.bsize - keep),
						join(stateDir, 'filler'),
					])
					expect((await sh(sandbox, FILL_VOLUME)).exitCode).toBe(0)
					const refused = await sandbox.checkpoint({ kind: 'memory' }).then(
						() => undefined,
						(error: unknown) => error,
					)
					expect(refused).toBeInstanceOf(CheckpointSpaceExhaustedError)
					expect(refused).toMatchObject({ operation: 'checkpoint' })
					expect(await provider.listCheckpoints()).toEqual([])
					expect(await readdir(join(stateDir, 'namzu-checkpoints'))).toEqual([])
					expect(await readdir(join(stateDir, 'namzu-cow', 'mnt', 'checkpoints'))).toEqual([])
					// Positive control: the sandbox went on from its image, its counter still counting.
					await memoryCounterPasses(sandbox, await memoryCounter(sandbox))
					expect((await sh(sandbox, 'cat small-7')).stdout).toBe('7\n')
					await sandbox.destroy()
				} finally {
					await provider.close()
					await host.remove()
				}
			},
			CASE_MS,
		)
	},
)
