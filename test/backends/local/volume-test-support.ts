/**
 * What the copy-on-write volume's tests share: whether this host can run them, the loop devices a
 * state directory holds, and how much of a file's data is shared with another (XFS extents).
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, mkdir, mkdtemp, open, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { bwrapSkipReason } from './bwrap-available.js'

const FIEMAP_SHARED = 0x2000

/** Why the volume's tests cannot run here (bubblewrap, root, xfsprogs), or undefined. */
export function volumeSkipReason(): string | undefined {
	const bwrap = bwrapSkipReason()
	if (bwrap !== undefined) return bwrap
	if (process.getuid?.() !== 0) return 'needs a root host (loop devices)'
	for (const tool of ['/usr/sbin/mkfs.xfs', '/usr/sbin/xfs_io', '/usr/sbin/xfs_growfs']) {
		if (!existsSync(tool)) return 'needs xfsprogs (apt-get install -y xfsprogs)'
	}
	return undefined
}

/** Loop devices whose backing file is under `dir`. */
export function loopsUnder(dir: string): string[] {
	const run = spawnSync('losetup', ['--list', '--noheadings', '--output', 'BACK-FILE'], {
		encoding: 'utf8',
	})
	return run.stdout
		.split('\n')
		.map((line) => line.trim())
		.filter((line) => line.startsWith(dir))
}

/** The flags of each data extent of `file` (`xfs_io fiemap`), holes left out. */
export function extentFlags(file: string): number[] {
	return extents(file).map((extent) => extent.flags)
}

/** The bytes of `file`'s data extents shared with another file, and its own. */
export function sharing(file: string): { shared: number; own: number } {
	const tally = { shared: 0, own: 0 }
	for (const extent of extents(file)) {
		if ((extent.flags & FIEMAP_SHARED) !== 0) tally.shared += extent.bytes
		else tally.own += extent.bytes
	}
	return tally
}

export const FIEMAP_SHARED_FLAG = FIEMAP_SHARED

function extents(file: string): { bytes: number; flags: number }[] {
	const out = execFileSync('/usr/sbin/xfs_io', ['-r', '-c', 'fiemap -v', file], {
		encoding: 'utf8',
	})
	return out
		.split('\n')
		.filter((line) => /^\s*\d+:/.test(line) && !line.includes('hole'))
		.map((line) => {
			const fields = line.trim().split(/\s+/)
			return {
				bytes: Number(fields.at(-2) ?? 0) * 512,
				flags: Number.parseInt(fields.at(-1) ?? '0', 16),
			}
		})
}

/** A small pre-made volume in `stateDir` (a provider uses an image it finds), so growth is seen. */
export async function smallVolume(stateDir: string, bytes: number): Promise<string> {
	const dir = join(stateDir, 'namzu-cow')
	await mkdir(dir, { mode: 0o700 })
	const image = join(dir, 'volume.img')
	const file = await open(image, 'wx', 0o600)
	await file.truncate(bytes)
	await file.close()
	execFileSync('/usr/sbin/mkfs.xfs', ['-q', '-m', 'reflink=1', image])
	return image
}

export interface SmallHost {
	/** A state directory on the small filesystem (its mount point). */
	readonly stateDir: string
	/** Unmounts it and removes its backing file. */
	readonly remove: () => Promise<void>
}

/** A small ext4 of its own, loop-mounted, so a state directory on it can be filled. */
export async function smallHostFilesystem(bytes: number): Promise<SmallHost> {
	const host = await mkdtemp(join(tmpdir(), 'namzu-small-host-'))
	await chmod(host, 0o711)
	const backing = join(host, 'host.img')
	const file = await open(backing, 'wx', 0o600)
	await file.truncate(bytes)
	await file.close()
	execFileSync('/usr/sbin/mkfs.ext4', ['-q', '-F', '-O', '^has_journal', backing])
	const stateDir = join(host, 'mnt')
	await mkdir(stateDir)
	execFileSync('mount', ['-o', 'loop', backing, stateDir])
	await chmod(stateDir, 0o711)
	return {
		stateDir,
		remove: async () => {
			spawnSync('umount', [stateDir])
			await rm(host, { recursive: true, force: true })
		},
	}
}
