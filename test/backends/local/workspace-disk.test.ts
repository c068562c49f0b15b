import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createLocalSandboxProvider } from '../../../src/backends/local/index.js'
import { adoptSandboxCgroups } from '../../../src/backends/machine/cgroups/cgroup-limits.js'
import { DiskLimitUnavailableError } from '../../../src/backends/machine/cgroups/limit-errors.js'
import {
	readHostClaims,
	releaseHostClaims,
	removeStateRoot,
} from '../../../src/backends/machine/claims/release-host-claims.js'
import {
	DEFAULT_SANDBOX_UID_RANGE,
	inUidRange,
} from '../../../src/backends/machine/claims/sandbox-identity.js'
import { destroyLocalSandbox } from '../../../src/backends/machine/index.js'
import { bundleSource, type SourceBundle } from '../../helpers/bundle-source.js'
import { bwrapSkipReason } from './bwrap-available.js'
import {
	cgroupDirsFor,
	crashHostAfterCreate,
	mountsUnder,
	stateDirIds,
	useLocalProvider,
	waitFor,
} from './local-test-support.js'

const bwrapSkip = bwrapSkipReason()
const skip = bwrapSkip ?? (process.getuid?.() === 0 ? undefined : 'needs root (loop mounts)')

function loopDevicesFor(stateDir: string): string[] {
	return execFileSync('losetup', ['-a'], { encoding: 'utf8' })
		.split('\n')
		.filter((line) => line.includes(stateDir))
}

describe.skipIf(skip !== undefined)(
	`diskLimitMb bounds what the workspace can hold${skip ? ` (skipped: ${skip})` : ''}`,
	() => {
		const file = useLocalProvider()
		let library: SourceBundle | undefined
		afterAll(async () => {
			await library?.remove()
		})

		it('a write under the limit succeeds, one past it fails with ENOSPC, and destroy leaves no mount', async () => {
			const sandbox = await file.provider.create({ diskLimitMb: 32 })
			try {
				const under = await sandbox.exec('dd', ['if=/dev/zero', 'of=under', 'bs=1M', 'count=16'])
				expect(under.exitCode).toBe(0)
				await sandbox.writeFile('notes.txt', 'still writable')
				expect((await sandbox.readFile('notes.txt')).toString()).toBe('still writable')
				const past = await sandbox.exec('dd', ['if=/dev/zero', 'of=past', 'bs=1M', 'count=64'])
				expect(past.exitCode).not.toBe(0)
				expect(past.stderr).toContain('No space left on device')
				// The workspace is its own filesystem, nosuid, and lists only what the workload wrote.
				const listing = (await sandbox.listFiles(sandbox.rootDir)).map((entry) => entry.path)
				expect(listing.some((path) => path.includes('lost+found'))).toBe(false)
				expect(mountsUnder(sandbox.rootDir)).toEqual([sandbox.rootDir])
				const options = (
					await sandbox.exec('sh', ['-c', `grep " ${sandbox.rootDir} " /proc/self/mounts`])
				).stdout
				expect(options).toContain('nosuid')
			} finally {
				await sandbox.destroy()
			}
			expect(mountsUnder(file.stateDir)).toEqual([])
			expect(loopDevicesFor(file.stateDir)).toEqual([])
			expect(stateDirIds(file.stateDir)).toEqual([])
		})

		it('a kept-alive sandbox with a sized workspace is unmounted by a destroy from its record', async () => {
			const sandbox = await file.provider.create({ diskLimitMb: 16, keepAlive: true })
			// Beside the copy-on-write volume its image lives in, where the state directory has one.
			expect(mountsUnder(file.stateDir)).toContain(sandbox.rootDir)
			expect(await destroyLocalSandbox(sandbox.id, { stateDir: file.stateDir })).toBe(true)
			expect(mountsUnder(file.stateDir)).toEqual([])
			expect(loopDevicesFor(file.stateDir)).toEqual([])
			expect(stateDirIds(file.stateDir)).toEqual([])
		})

		it('belongs to the sandbox uid, and is in the host-claims record before it is mounted', async () => {
			const sandbox = await file.provider.create({ diskLimitMb: 16 })
			try {
				const claims = await readHostClaims(sandbox.id, dirname(sandbox.rootDir))
				// `workspaceVolume` when its image lives in the state directory's copy-on-write volume.
				expect([claims?.workspaceDisk, claims?.workspaceVolume]).toContain(sandbox.rootDir)
				const owner = (await stat(sandbox.rootDir)).uid
				expect(inUidRange(owner, DEFAULT_SANDBOX_UID_RANGE)).toBe(true)
				expect(owner).toBe(claims?.identity?.uid)
				// What the workload makes there is that uid's on the host too.
				await sandbox.exec('touch', ['made'])
				expect((await stat(join(sandbox.rootDir, 'made'))).uid).toBe(owner)
			} finally {
				await sandbox.destroy()
			}
		})

		it('after the host is SIGKILLed, the host-claims record alone unmounts it', async () => {
			library ??= await bundleSource('src/backends/local/index.ts', 'local-tier')
			const { id } = await crashHostAfterCreate(
				library,
				file.stateDir,
				'sandbox = await provider.create({ diskLimitMb: 16 })',
			)
			const stateRoot = join(file.stateDir, `namzu-sbx-${id}`)
			expect(mountsUnder(stateRoot)).toEqual([join(stateRoot, 'workspace')])
			const claims = await readHostClaims(id, stateRoot)
			if (claims === undefined) throw new Error('no host-claims record')
			await waitFor(() => spawnSync('pgrep', ['-f', stateRoot]).status !== 0)
			await releaseHostClaims(claims)
			await releaseHostClaims(claims)
			await removeStateRoot(stateRoot)
			await adoptSandboxCgroups(cgroupDirsFor([id])).remove()
			expect(mountsUnder(file.stateDir)).toEqual([])
			expect(loopDevicesFor(file.stateDir)).toEqual([])
			expect(stateDirIds(file.stateDir)).toEqual([])
		})

		it('is refused by name for a caller-supplied workspace, and nothing is created', async () => {
			const workspace = await mkdtemp(join(tmpdir(), 'namzu-disk-caller-'))
			try {
				const error = await file.provider
					.create({ diskLimitMb: 64, workingDirectory: workspace })
					.catch((caught: unknown) => caught)
				expect(error).toBeInstanceOf(DiskLimitUnavailableError)
				expect(error).toMatchObject({ refusal: 'caller-workspace', diskLimitMb: 64 })
				expect((error as Error).message).toContain('diskLimitMb')
				expect(stateDirIds(file.stateDir)).toEqual([])
			} finally {
				await rm(workspace, { recursive: true, force: true })
			}
		})

		it('is refused by name when mkfs.ext4 is missing, never ignored', async () => {
			const bare = createLocalSandboxProvider({
				tier: 'process',
				stateDir: file.stateDir,
				tools: { mkfsExt4: '/nonexistent/mkfs.ext4' },
			})
			try {
				const error = await bare.create({ diskLimitMb: 64 }).catch((caught: unknown) => caught)
				expect(error).toBeInstanceOf(DiskLimitUnavailableError)
				expect(error).toMatchObject({ refusal: 'mkfs-missing', reason: 'disk-limit-unavailable' })
				expect((error as Error).message).toContain('e2fsprogs')
				expect(stateDirIds(file.stateDir)).toEqual([])
			} finally {
				await bare.close()
			}
		})
	},
)
