/**
 * Loop devices backing block-mode claims: a claim's sparse file attached with `losetup --find
 * --show`, detached with `losetup --detach`. Every attached device is recorded under
 * `/run/namzu-process-kubelet/loops/` with its backing file and its owner (this process), so a
 * crashed run leaks nothing for long: `reapAbandonedLoops` — run when a kubelet or a test cluster
 * starts — unmounts what is still mounted from a dead owner's device and detaches it, and only
 * while the device is still backed by the recorded file (a loop number reused since is never
 * touched). Needs root.
 */
import { mkdir, open, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { isRecord } from '../paths.js'
import { SLOT_REGISTRY_DIR } from './harness-network.js'
import { describeFailure, execHost } from './host-command.js'
import { BlockDiskError } from './kubelet-errors.js'
import { currentOwner, isProcessOwner, ownerAlive, type ProcessOwner } from './process-owner.js'

export const LOOP_REGISTRY_DIR = join(SLOT_REGISTRY_DIR, 'loops')

interface LoopRecord {
	readonly device: string
	readonly backingFile: string
	readonly owner: ProcessOwner
}

function isLoopRecord(value: unknown): value is LoopRecord {
	return (
		isRecord(value) &&
		typeof value.device === 'string' &&
		/^\/dev\/loop\d+$/.test(value.device) &&
		typeof value.backingFile === 'string' &&
		isProcessOwner(value.owner)
	)
}

function recordFile(registryDir: string, device: string): string {
	return join(registryDir, `${basename(device)}.json`)
}

async function losetup(args: readonly string[]): Promise<string> {
	const result = await execHost('losetup', args)
	if (result.code !== 0) {
		throw new BlockDiskError('losetup-failed', describeFailure('losetup', args, result))
	}
	return result.stdout
}

/** The file backing `device` now, or undefined when it is not attached. */
export async function loopBackingFile(device: string): Promise<string | undefined> {
	const result = await execHost('losetup', ['--noheadings', '--output', 'BACK-FILE', device])
	if (result.code !== 0) return undefined
	const file = result.stdout.trim()
	return file === '' ? undefined : file.replace(/ \(deleted\)$/, '')
}

/** Every loop device currently backed by `file`. */
export async function loopsBackedBy(file: string): Promise<string[]> {
	const out = await losetup(['--noheadings', '--output', 'NAME', '--associated', file])
	return out
		.split('\n')
		.map((line) => line.trim())
		.filter((line) => /^\/dev\/loop\d+$/.test(line))
}

/** Creates `file` (sparse, `bytes` long) unless it exists; an existing file keeps its size and data. */
export async function ensureSparseFile(file: string, bytes: number): Promise<void> {
	let handle: Awaited<ReturnType<typeof open>>
	try {
		handle = await open(file, 'wx', 0o600)
	} catch (error) {
		if (isRecord(error) && error.code === 'EEXIST') return
		throw error
	}
	try {
		await handle.truncate(bytes)
	} finally {
		await handle.close()
	}
}

/** Attaches `file` to the first free loop device and records it; returns `/dev/loopN`. */
export async function attachLoop(
	file: string,
	registryDir: string = LOOP_REGISTRY_DIR,
): Promise<string> {
	const device = (await losetup(['--find', '--show', file])).trim()
	if (!/^\/dev\/loop\d+$/.test(device)) {
		throw new BlockDiskError('losetup-failed', `losetup --find --show ${file} printed "${device}"`)
	}
	await mkdir(registryDir, { recursive: true })
	const record: LoopRecord = { device, backingFile: file, owner: await currentOwner() }
	await writeFile(recordFile(registryDir, device), JSON.stringify(record))
	return device
}

/**
 * Detaches `device` if it is still backed by `file`, and forgets its record. A device that is
 * still mounted somewhere is detached by the kernel when its last user goes (autoclear).
 */
export async function detachLoop(
	device: string,
	file: string,
	registryDir: string = LOOP_REGISTRY_DIR,
): Promise<void> {
	if ((await loopBackingFile(device)) === file) await losetup(['--detach', device])
	await rm(recordFile(registryDir, device), { force: true })
}

/** Mount points whose source is `device`, from /proc/self/mountinfo, deepest first. */
export async function mountsOf(device: string): Promise<string[]> {
	const text = await readFile('/proc/self/mountinfo', 'utf8')
	const points: string[] = []
	for (const line of text.split('\n')) {
		const [left, right] = line.split(' - ')
		if (left === undefined || right === undefined) continue
		const source = right.split(' ')[1]
		const point = left.split(' ')[4]
		if (source === device && point !== undefined) points.push(decodeMountPath(point))
	}
	return points.sort((a, b) => b.length - a.length)
}

/** mountinfo escapes space, tab, newline and backslash as octal. */
function decodeMountPath(path: string): string {
	return path.replace(/\\([0-7]{3})/g, (_, octal: string) =>
		String.fromCharCode(Number.parseInt(octal, 8)),
	)
}

/** Unmounts `path`, lazily when something still holds it (a crashed run's leftovers). */
export async function unmountQuietly(path: string): Promise<void> {
	const result = await execHost('umount', [path])
	if (result.code !== 0) await execHost('umount', ['--lazy', path])
}

/**
 * Detaches the loop devices recorded by owners that are gone (a crashed kubelet), unmounting
 * their filesystems first. Returns the devices it detached.
 */
export async function reapAbandonedLoops(
	registryDir: string = LOOP_REGISTRY_DIR,
): Promise<string[]> {
	const reaped: string[] = []
	for (const name of await readdir(registryDir).catch(() => [] as string[])) {
		if (!name.endsWith('.json')) continue
		const file = join(registryDir, name)
		let record: unknown
		try {
			record = JSON.parse(await readFile(file, 'utf8'))
		} catch {
			record = undefined
		}
		if (!isLoopRecord(record)) {
			await rm(file, { force: true })
			continue
		}
		if (await ownerAlive(record.owner)) continue
		if ((await loopBackingFile(record.device)) === record.backingFile) {
			for (const point of await mountsOf(record.device)) await unmountQuietly(point)
			await execHost('losetup', ['--detach', record.device])
			reaped.push(record.device)
		}
		await rm(file, { force: true })
	}
	return reaped
}
