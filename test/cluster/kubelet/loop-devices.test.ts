/**
 * Loop devices and the block filesystem with real losetup, blkid, mkfs.ext4 and mount (root
 * only): never reformat a device that carries a signature, and reap a crashed owner's devices —
 * mounts first — without touching a live owner's or a loop number reused for another file.
 */
import { execFileSync } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { formatIfEmpty, mountDisk, probeSignature, unmountDisk } from './block-filesystem.js'
import {
	attachLoop,
	detachLoop,
	ensureSparseFile,
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

describe.skipIf(!root)('loop devices and their filesystems (root)', () => {
	it('formats a device blkid proves empty, and never again once it carries ext4', async () => {
		const { device, file } = await attach('disk.img')
		expect(await loopBackingFile(device)).toBe(file)
		expect(await probeSignature(device)).toBeUndefined()
		expect(await formatIfEmpty(device)).toBe(true)
		expect(await probeSignature(device)).toBe('ext4')
		const mountPoint = join(dir, 'mnt')
		await mountDisk(device, mountPoint)
		await writeFile(join(mountPoint, 'kept'), 'data')
		expect(await unmountDisk(mountPoint)).toBe(true)
		expect(await formatIfEmpty(device)).toBe(false)
		await mountDisk(device, mountPoint)
		expect(await readFile(join(mountPoint, 'kept'), 'utf8')).toBe('data')
		expect(await unmountDisk(mountPoint)).toBe(true)
	})

	it('refuses, without formatting, a device that carries another signature', async () => {
		const file = join(dir, 'swap.img')
		await ensureSparseFile(file, 32 * MIB)
		execFileSync('mkswap', [file], { stdio: 'ignore' })
		const device = await attachLoop(file, registry)
		attached.push({ device, file })
		await expect(formatIfEmpty(device)).rejects.toMatchObject({
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
		await formatIfEmpty(dead.device)
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
})
