/**
 * Loop devices and the block filesystem with real losetup, blkid, mkfs.ext4 and mount (root
 * only): never reformat a device that carries a signature, and reap a crashed owner's devices —
 * mounts first — without touching a live owner's or a loop number reused for another file.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { reapAbandonedRuns, tempStatePrefix } from '../abandoned-runs.js'
import {
	ensureExt4,
	heldByAnotherNamespace,
	mountDisk,
	probeSignature,
	unmountDisk,
} from './block-filesystem.js'
import {
	attachLoop,
	detachLoop,
	ensureSparseFile,
	LOOP_REGISTRY_DIR,
	loopBackingFile,
	mountsOf,
	reapAbandonedLoops,
} from './loop-devices.js'

const root = process.getuid?.() === 0
const MIB = 2 ** 20

let dir = ''
let registry = ''
const attached: { device: string; file: string }[] = []

beforeEach(async () => {
	dir = await mkdtemp(join(tmpdir(), 'namzu-loop-test-'))
	registry = join(dir, 'registry')
})

afterEach(async () => {
	for (const { device, file } of attached.splice(0)) {
		// A number this test detached may already be someone else's (another test's loop mount).
		if ((await loopBackingFile(device)) !== file) continue
		for (const point of await mountsOf(device)) await unmountDisk(point)
		await detachLoop(device, file, registry).catch(() => undefined)
	}
	await rm(dir, { recursive: true, force: true })
})

async function attach(name: string): Promise<{ device: string; file: string }> {
	const file = join(dir, name)
	await ensureSparseFile(file, 32 * MIB)
	const device = await attachLoop(file, registry)
	const entry = { device, file }
	attached.push(entry)
	return entry
}

describe('an e2fsck refusal read as another namespace holding the device', () => {
	it.each([
		{ code: 8, stdout: '/dev/loop1 is in use.\n', held: true },
		{ code: 8, stdout: '/dev/loop1 is mounted.\n', held: false },
		{ code: 8, stdout: '', held: false },
		{ code: 4, stdout: '/dev/loop1 is in use.\n', held: false },
		{ code: 0, stdout: '/dev/loop1: clean', held: false },
	])('exit $code with "$stdout" → $held', ({ code, stdout, held }) => {
		expect(heldByAnotherNamespace({ code, stdout, stderr: '' })).toBe(held)
	})
})

/**
 * A process in a mount namespace of its own, created while `mountPoint` is mounted and with
 * private propagation, so it keeps a copy of that mount after the host unmounts it.
 */
async function holdACopyOf(mountPoint: string, seconds: number): Promise<ChildProcess> {
	const holder = spawn('unshare', ['-m', '--propagation', 'private', 'sleep', String(seconds)], {
		stdio: 'ignore',
	})
	const pid = holder.pid ?? 0
	for (let tries = 0; tries < 200; tries += 1) {
		const comm = await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '')
		if (comm.trim() === 'sleep') break
		await new Promise((resolve) => setTimeout(resolve, 10))
	}
	const mounts = await readFile(`/proc/${pid}/mounts`, 'utf8')
	expect(mounts).toContain(mountPoint)
	return holder
}

describe.skipIf(!root)('loop devices and their filesystems (root)', () => {
	it('formats a device blkid proves empty, and never again once it carries ext4', async () => {
		const { device, file } = await attach('disk.img')
		expect(await loopBackingFile(device)).toBe(file)
		expect(await probeSignature(device)).toBeUndefined()
		expect(await ensureExt4(device)).toBe('formatted')
		expect(await probeSignature(device)).toBe('ext4')
		const mountPoint = join(dir, 'mnt')
		await mountDisk(device, mountPoint)
		await writeFile(join(mountPoint, 'kept'), 'data')
		expect(await unmountDisk(mountPoint)).toBe(true)
		expect(await ensureExt4(device)).toBe('checked')
		await mountDisk(device, mountPoint)
		expect(await readFile(join(mountPoint, 'kept'), 'utf8')).toBe('data')
		expect(await unmountDisk(mountPoint)).toBe(true)
	})

	it('refuses to mount an ext4 whose metadata e2fsck cannot repair, and leaves it as it is', async () => {
		const { device } = await attach('broken.img')
		expect(await ensureExt4(device)).toBe('formatted')
		// The guest can write its raw device: here the root directory's inode is wiped.
		execFileSync('debugfs', ['-w', '-R', 'clri <2>', device], { stdio: 'ignore' })
		await expect(ensureExt4(device)).rejects.toMatchObject({
			name: 'BlockDiskError',
			reason: 'fsck-failed',
		})
		expect(await probeSignature(device)).toBe('ext4')
	})

	it('refuses, without formatting, a device that carries another signature', async () => {
		const file = join(dir, 'swap.img')
		await ensureSparseFile(file, 32 * MIB)
		execFileSync('mkswap', [file], { stdio: 'ignore' })
		const device = await attachLoop(file, registry)
		attached.push({ device, file })
		await expect(ensureExt4(device)).rejects.toMatchObject({
			name: 'BlockDiskError',
			reason: 'not-ext4',
		})
		expect(await probeSignature(device)).toBe('swap')
	})

	it('an existing disk file keeps its size and bytes', async () => {
		const file = join(dir, 'kept.img')
		await writeFile(file, 'not empty')
		await ensureSparseFile(file, 32 * MIB)
		expect(await readFile(file, 'utf8')).toBe('not empty')
	})

	it('reaps a dead owner’s device (unmounting it first) but not a live owner’s or a reused number', async () => {
		const dead = await attach('dead.img')
		const live = await attach('live.img')
		await ensureExt4(dead.device)
		const mountPoint = join(dir, 'dead-mnt')
		await mountDisk(dead.device, mountPoint)
		// A crashed owner: same pid, another start time (a recycled pid is not the owner).
		const deadRecord = join(registry, `${dead.device.slice('/dev/'.length)}.json`)
		const record = JSON.parse(await readFile(deadRecord, 'utf8'))
		await writeFile(
			deadRecord,
			JSON.stringify({ ...record, owner: { pid: process.pid, startTicks: '1' } }),
		)
		// A dead owner's record naming a device that now backs another file: left alone.
		const reused = await attach('reused.img')
		const reusedRecord = join(registry, `${reused.device.slice('/dev/'.length)}.json`)
		await writeFile(
			reusedRecord,
			JSON.stringify({
				device: reused.device,
				backingFile: join(dir, 'someone-else.img'),
				owner: { pid: process.pid, startTicks: '1' },
			}),
		)

		expect(await reapAbandonedLoops(registry)).toEqual([dead.device])

		expect(await loopBackingFile(dead.device)).not.toBe(dead.file)
		expect(await mountsOf(dead.device)).toEqual([])
		expect(await loopBackingFile(live.device)).toBe(live.file)
		expect(await loopBackingFile(reused.device)).toBe(reused.file)
		await expect(readFile(deadRecord)).rejects.toMatchObject({ code: 'ENOENT' })
		await expect(readFile(reusedRecord)).rejects.toMatchObject({ code: 'ENOENT' })
		await readFile(join(registry, `${live.device.slice('/dev/'.length)}.json`))
	})

	it('a test cluster’s start unmounts and detaches a crashed run’s disks before removing its state directory', async () => {
		// A crashed run: its owner process is gone, its kubelet's disk still attached and mounted
		// in its state directory, recorded in the machine's loop registry.
		const runs = join(dir, 'runs')
		const state = join(runs, `${tempStatePrefix}crashed`)
		const gone = spawnSync('true').pid
		await mkdir(join(state, 'kubelet', 'pvcs', 'ns', 'uid'), { recursive: true })
		await writeFile(join(state, 'owner.json'), JSON.stringify({ pid: gone }))
		const file = join(state, 'kubelet', 'pvcs', 'ns', 'uid', 'disk.img')
		await ensureSparseFile(file, 32 * MIB)
		const device = await attachLoop(file)
		attached.push({ device, file })
		await ensureExt4(device)
		const mountPoint = join(state, 'kubelet', 'pods', 'pod-uid', 'disks', 'workspace')
		await mountDisk(device, mountPoint)
		await writeFile(join(mountPoint, 'data'), 'x')
		const record = join(LOOP_REGISTRY_DIR, `${device.slice('/dev/'.length)}.json`)
		const written = JSON.parse(await readFile(record, 'utf8'))
		await writeFile(record, JSON.stringify({ ...written, owner: { pid: gone, startTicks: '1' } }))

		expect(await reapAbandonedRuns(runs)).toEqual([state])

		expect(existsSync(state)).toBe(false)
		expect(await mountsOf(device)).toEqual([])
		expect(await loopBackingFile(device)).not.toBe(file)
		expect(existsSync(record)).toBe(false)
	})

	it('checks an ext4 another mount namespace still held when it was unmounted here, once that namespace lets go', async () => {
		const { device } = await attach('held.img')
		expect(await ensureExt4(device)).toBe('formatted')
		const mountPoint = join(dir, 'held-mnt')
		await mountDisk(device, mountPoint)
		const holder = await holdACopyOf(mountPoint, 1.5)
		const exited = new Promise((resolve) => holder.once('exit', resolve))
		expect(await unmountDisk(mountPoint)).toBe(true)
		expect(await ensureExt4(device)).toBe('checked')
		await exited
	})

	it('names a device still held past the bound as device-busy, not as a damaged filesystem', async () => {
		const { device } = await attach('stuck.img')
		expect(await ensureExt4(device)).toBe('formatted')
		const mountPoint = join(dir, 'stuck-mnt')
		await mountDisk(device, mountPoint)
		const holder = await holdACopyOf(mountPoint, 30)
		try {
			expect(await unmountDisk(mountPoint)).toBe(true)
			await expect(ensureExt4(device, 400)).rejects.toMatchObject({
				name: 'BlockDiskError',
				reason: 'device-busy',
				message: expect.stringContaining('is in use'),
			})
		} finally {
			holder.kill('SIGKILL')
			await new Promise((resolve) => holder.once('exit', resolve))
		}
		expect(await ensureExt4(device)).toBe('checked')
	})
})
