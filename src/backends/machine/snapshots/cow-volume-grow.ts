/**
 * Growing the copy-on-write volume online when it fills: the sparse image is lengthened (no host
 * bytes are written), the loop device told its new size (`losetup -c`) and the mounted XFS grown
 * into it (`xfs_growfs -d`), under the volume's lock. How far it may grow is
 * `volumeGrowthTarget`'s (bounded by what the host has free); past that the caller refuses by
 * name (`CheckpointSpaceExhaustedError`).
 */
import { open, stat, statfs } from 'node:fs/promises'
import { runProgramOrThrow } from '../launch/host-tools.js'
import { volumeImagePath, volumeMounted, withVolumeLock } from './cow-volume.js'
import { volumeGrowthTarget } from './cow-volume-decision.js'
import { loopBackingOf } from './loop-backing.js'
import { cowDir, volumeMountPath } from './snapshot-layout.js'

export const XFS_GROWFS_PATH = '/usr/sbin/xfs_growfs'
const LOSETUP = '/usr/sbin/losetup'
const TOOL_TIMEOUT_MS = 60_000
const MIB = 1024 * 1024
/** What a grown XFS keeps of its new space for itself (new groups' headers, a larger log). */
const GROWTH_OVERHEAD_BYTES = 32 * MIB

function run(file: string, args: readonly string[]): Promise<void> {
	return runProgramOrThrow(file, args, { signal: AbortSignal.timeout(TOOL_TIMEOUT_MS) })
}

/** What the mounted volume has free, in bytes. */
export async function volumeFreeBytes(stateBase: string): Promise<number> {
	const info = await statfs(volumeMountPath(stateBase))
	return info.bavail * info.bsize
}

/**
 * Makes the mounted volume hold at least `neededBytes` more than it has free, growing it when it
 * must; answers whether it now does. The caller is a registered user (so it stays mounted) and
 * does not hold the volume's lock.
 */
export async function ensureVolumeRoom(stateBase: string, neededBytes: number): Promise<boolean> {
	if ((await volumeFreeBytes(stateBase)) >= neededBytes) return true
	return withVolumeLock(stateBase, async () => {
		if (!(await volumeMounted(stateBase))) return false
		const free = await volumeFreeBytes(stateBase)
		// Another user grew it while this one waited for the lock.
		if (free >= neededBytes) return true
		const image = volumeImagePath(stateBase)
		const [info, host, loop] = await Promise.all([
			stat(image),
			statfs(cowDir(stateBase)),
			loopBackingOf(volumeMountPath(stateBase)),
		])
		if (loop === undefined) return false
		const target = volumeGrowthTarget({
			volumeBytes: info.size,
			allocatedBytes: info.blocks * 512,
			hostFreeBytes: host.bavail * host.bsize,
			neededBytes: neededBytes - free + GROWTH_OVERHEAD_BYTES,
		})
		if (target === undefined) return false
		const file = await open(image, 'r+')
		try {
			await file.truncate(target)
		} finally {
			await file.close()
		}
		await run(LOSETUP, ['-c', loop.device])
		await run(XFS_GROWFS_PATH, ['-d', volumeMountPath(stateBase)])
		return (await volumeFreeBytes(stateBase)) >= neededBytes
	})
}
