/**
 * Where checkpoints and the copy-on-write volume live in a state directory (pure names and paths):
 * `namzu-checkpoints/` holds every checkpoint's record (and its content unless the volume holds
 * it); `namzu-cow/` holds the volume's sparse image, its mount point, its users and its lock. Both
 * the store and the volume read this, so neither imports the other's internals.
 */
import { join } from 'node:path'

/** The store's directory in a provider's state directory. */
export const CHECKPOINTS_DIR_NAME = 'namzu-checkpoints'
/** The copy-on-write volume's directory in a provider's state directory. */
export const COW_DIR_NAME = 'namzu-cow'
/** A capture in progress (or a deletion under way): `.partial-<id>` in the store. */
export const PARTIAL_PREFIX = '.partial-'
/** In a partial directory: the process capturing into it (pid and start time). */
export const CAPTURER_FILE = 'capturer.json'
/** In a checkpoint's store directory: its content, unless the volume holds it. */
export const CONTENT_DIR_NAME = 'content'
/** In a checkpoint's store directory: its content is in the volume (`checkpoints/<id>`). */
export const IN_VOLUME_MARKER = 'in-volume'
/** In a checkpoint's store directory: its content is a sized workspace's image (`workspace.img`). */
export const IMAGE_MARKER = 'sized-image'
/** In `namzu-cow/`: a sized checkpoint's image mounted read-only for a restore. */
export const RESTORE_MOUNT_PREFIX = 'restore-'
export const CHECKPOINT_ID_PATTERN = /^[0-9a-f]{16}$/

export function checkpointStoreDir(stateBase: string): string {
	return join(stateBase, CHECKPOINTS_DIR_NAME)
}

export function cowDir(stateBase: string): string {
	return join(stateBase, COW_DIR_NAME)
}

/** The volume's mount point. */
export function volumeMountPath(stateBase: string): string {
	return join(cowDir(stateBase), 'mnt')
}

/** A sandbox's workspace inside the (mounted) volume. */
export function volumeSandboxDir(stateBase: string, sandboxId: string): string {
	return join(volumeMountPath(stateBase), 'sandboxes', sandboxId)
}

/** A checkpoint's content inside the (mounted) volume. */
export function volumeCheckpointDir(stateBase: string, checkpointId: string): string {
	return join(volumeMountPath(stateBase), 'checkpoints', checkpointId)
}

/** Warm-start snapshots (`snapshot-cache.ts`) in a provider's state directory. */
export const SNAPSHOT_CACHE_DIR_NAME = 'namzu-snapshot-cache'

export function snapshotCacheDir(stateBase: string): string {
	return join(stateBase, SNAPSHOT_CACHE_DIR_NAME)
}
