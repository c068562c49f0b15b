/**
 * Checkpoints of a sized workspace (`diskLimitMb`) whose image file can be cloned: on the
 * copy-on-write volume, or on a state directory that clones. The limit is the image's filesystem
 * size, so a checkpoint clones the whole image (`cp --reflink=always` of a sparse file: metadata,
 * not bytes) with the sandbox paused and its filesystem synced; a fork of the same or a larger size
 * starts from a clone of it (`fork-image.ts`).
 *
 * A rollback swaps in a clone of the checkpoint's image (`image-swap.ts`). A fork smaller than the
 * checkpoint, a fork or rollback whose image cannot be cloned or swapped, and a rollback under a
 * guest with its own file cache (gVisor) are filled by a copy of the files out of the checkpoint's
 * image mounted read-only, bounded by the workspace's limit (a fork refused by name, before the
 * copy, when they cannot fit). The image is only ever
 * written by the kernel's ext4 on the sandbox's behalf (the guest never sees the file), so the
 * host mounts no guest-crafted filesystem.
 */
import type { Stats } from 'node:fs'
import { chmod, chown, mkdir, mkdtemp, realpath, rmdir, stat, statfs } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { CONFIG_SITE } from '../../../contract/argument-validators.js'
import { HOST_TOOLS, runHostToolOrThrow, runProgramOrThrow } from '../launch/host-tools.js'
import { WORKSPACE_IMAGE } from '../workspace/workspace-disk.js'
import { checkpointCopyMode, onVolume } from './cow-volume.js'
import { loopBackingOf } from './loop-backing.js'
import {
	CHECKPOINT_ID_PATTERN,
	CONTENT_DIR_NAME,
	checkpointStoreDir,
	cowDir,
	IMAGE_MARKER,
	IN_VOLUME_MARKER,
	RESTORE_MOUNT_PREFIX,
	volumeCheckpointDir,
} from './snapshot-layout.js'

const CP = '/usr/bin/cp'
const SYNC = '/usr/bin/sync'
const MIB = 1024 * 1024

/** The image of the sized workspace mounted on `workspace`, when checkpoints can clone it. */
export async function clonableImageOf(
	stateBase: string,
	workspace: string,
): Promise<string | undefined> {
	const decision = await checkpointCopyMode(stateBase)
	if (decision.mode === 'copy') return undefined
	const [loop, own, parent] = await Promise.all([
		loopBackingOf(workspace),
		stat(workspace),
		stat(dirname(workspace)),
	])
	// The workspace must be the image's root, not a directory inside some other loop mount.
	if (loop === undefined || own.dev === parent.dev) return undefined
	const image = await realpath(loop.backingFile).catch(() => undefined)
	if (image === undefined || basename(image) !== WORKSPACE_IMAGE) return undefined
	if (!image.startsWith(`${stateBase}/`)) return undefined
	if (decision.mode === 'volume' && !(await onVolume(stateBase, image))) return undefined
	return image
}

async function exists(path: string): Promise<boolean> {
	return stat(path).then(
		() => true,
		() => false,
	)
}

/**
 * The image of a sized workspace's checkpoint (complete, `IMAGE_MARKER`), where it lies: in the
 * volume (mounted only while some user holds it) or in the store; undefined for any other.
 */
export async function sizedCheckpointImage(
	stateBase: string,
	id: string,
): Promise<string | undefined> {
	if (!CHECKPOINT_ID_PATTERN.test(id)) return undefined
	const dir = join(checkpointStoreDir(stateBase), id)
	if (!(await exists(join(dir, IMAGE_MARKER)))) return undefined
	const content = (await exists(join(dir, IN_VOLUME_MARKER)))
		? volumeCheckpointDir(stateBase, id)
		: join(dir, CONTENT_DIR_NAME)
	return join(content, WORKSPACE_IMAGE)
}

export interface ImageCapture {
	readonly workspace: string
	readonly image: string
	/** Pauses the sandbox's processes; answers the resume (always called). */
	readonly pause: () => Promise<() => Promise<void>>
	readonly signal?: AbortSignal
}

/** Clones the workspace's image into `content` (made here) with the sandbox paused and synced. */
export async function captureImage(capture: ImageCapture, content: string): Promise<void> {
	await mkdir(content, { mode: 0o700 })
	const options = capture.signal ? { signal: capture.signal } : {}
	capture.signal?.throwIfAborted()
	const resume = await capture.pause()
	try {
		// What the paused processes wrote is in the image's filesystem's cache: syncfs puts it in
		// the image (the clone flushes the image file's own dirty pages itself).
		await runProgramOrThrow(SYNC, ['-f', capture.workspace], options)
		await runProgramOrThrow(
			CP,
			['--reflink=always', '--', capture.image, join(content, WORKSPACE_IMAGE)],
			options,
		)
	} finally {
		await resume()
	}
}

/** Gives the whole workspace to `owner`'s uid (a fork's differs from its parent's) and mode. */
export async function adoptWorkspace(
	workspace: string,
	owner: Pick<Stats, 'uid' | 'gid' | 'mode'>,
	signal: AbortSignal | undefined,
): Promise<void> {
	if (process.getuid?.() === 0) {
		await runHostToolOrThrow('chown', ['-R', '-h', `${owner.uid}:${owner.gid}`, '--', workspace], {
			...(signal ? { signal } : {}),
		})
	} else {
		await chown(workspace, owner.uid, owner.gid).catch(() => undefined)
	}
	// A copy or a clone carried the checkpoint's mode onto the root: the workspace keeps its own.
	await chmod(workspace, owner.mode & 0o7777)
}

export interface ImageRestore {
	readonly stateBase: string
	/** The checkpoint's image. */
	readonly image: string
	readonly workspace: string
	readonly operation: 'fork' | 'rollback'
	readonly signal?: AbortSignal
	/** Replaces the workspace's contents with a directory's (the store's file-level restore). */
	readonly copyFrom: (dir: string) => Promise<void>
}

/**
 * A fork smaller than its checkpoint's image takes its files only if they fit: refused by name,
 * before any is copied, when what the checkpoint's filesystem holds exceeds what the fork's has
 * free (ext4's statfs leaves its own metadata out of both).
 */
async function assertForkHolds(checkpoint: string, workspace: string): Promise<void> {
	const [held, room, loop] = await Promise.all([
		statfs(checkpoint),
		statfs(workspace),
		loopBackingOf(workspace),
	])
	const usedBytes = (held.blocks - held.bfree) * held.bsize
	const freeBytes = room.bavail * room.bsize
	if (usedBytes <= freeBytes) return
	const image = loop === undefined ? undefined : await stat(loop.backingFile).catch(() => undefined)
	const sizeBytes = image?.size ?? room.blocks * room.bsize
	const neededMb = Math.ceil((sizeBytes - freeBytes + usedBytes) / MIB)
	throw CONFIG_SITE.refuse(
		'diskLimitMb',
		`at least ${neededMb} to fork this checkpoint (its files use ${Math.ceil(usedBytes / MIB)} MiB)`,
		String(Math.floor(sizeBytes / MIB)),
	)
}

/**
 * Restores a sized workspace's checkpoint by a file copy out of its image mounted read-only: a
 * rollback that could not swap images (`image-swap.ts`), or a fork its image could not seed
 * (`fork-image.ts`).
 */
export async function restoreImage(restore: ImageRestore): Promise<void> {
	await mkdir(cowDir(restore.stateBase), { recursive: true, mode: 0o700 })
	const mountPoint = await mkdtemp(join(cowDir(restore.stateBase), RESTORE_MOUNT_PREFIX))
	try {
		await runHostToolOrThrow(
			'mount',
			['-o', 'loop,ro,nosuid,nodev,noexec', restore.image, mountPoint],
			restore.signal ? { signal: restore.signal } : {},
		)
		try {
			if (restore.operation === 'fork') await assertForkHolds(mountPoint, restore.workspace)
			await restore.copyFrom(mountPoint)
		} finally {
			await runProgramOrThrow(HOST_TOOLS.umount, [mountPoint])
		}
	} finally {
		await rmdir(mountPoint).catch(() => undefined)
	}
}
