/**
 * The pure half of the copy-on-write volume (`cow-volume.ts`): how checkpoints are copied on this
 * host, how large the volume's sparse image is, and what may be undone once its users are gone.
 * Table-tested without a mount.
 */
import { debianInstallCommand } from '../launch/install-hint.js'

/**
 * How a state directory's checkpoints share bytes with their workspaces:
 * - `reflink`: the state directory's own filesystem clones files (btrfs, XFS with reflink=1);
 * - `volume`: a sparse XFS image (reflink=1) loop-mounted in the state directory holds the
 *   workspaces of checkpointable sandboxes and the checkpoints' content, so both are clones;
 * - `copy`: neither is possible (a non-root host, no `mkfs.xfs`, no loop devices): full copies.
 */
export type CheckpointCopyMode = 'reflink' | 'volume' | 'copy'

export interface CopyModeFacts {
	/** `cp --reflink=always` of a probe file in the state directory succeeded. */
	readonly stateDirClones: boolean
	readonly asRoot: boolean
	/** `mkfs.xfs` is executable at its fixed path. */
	readonly mkfsXfs: boolean
	/** `/dev/loop-control` exists (loop devices can be made). */
	readonly loopControl: boolean
	/** What the state directory's filesystem has free for this user, in bytes. */
	readonly hostFreeBytes: number
}

export interface CopyModeDecision {
	readonly mode: CheckpointCopyMode
	/** One line for `doctor` and the docs. */
	readonly why: string
	/** `volume` only: the sparse image's size. */
	readonly volumeBytes?: number
}

const MIB = 1024 * 1024
const GIB = 1024 * MIB
/** The smallest volume worth making (mkfs.xfs refuses below 300 MiB). */
export const MIN_VOLUME_BYTES = GIB
/** The largest: the image is sparse, but its metadata grows with its size. */
export const MAX_VOLUME_BYTES = 1024 * GIB
/** The share of the host's free space the volume may claim, so the host fills after it does. */
const HOST_FREE_SHARE = 0.9

/**
 * The sparse image's size: 90% of what the host filesystem has free now, at most 1 TiB, whole
 * MiB; undefined when that is under 1 GiB. The inner filesystem then reports ENOSPC before the
 * host's fills (unless something else fills the host meanwhile).
 */
export function volumeBytesFor(hostFreeBytes: number): number | undefined {
	const share = Math.min(
		Math.floor((hostFreeBytes * HOST_FREE_SHARE) / MIB) * MIB,
		MAX_VOLUME_BYTES,
	)
	return share >= MIN_VOLUME_BYTES ? share : undefined
}

/** Which mode a state directory gets, and why. */
export function decideCopyMode(facts: CopyModeFacts): CopyModeDecision {
	if (facts.stateDirClones) {
		return { mode: 'reflink', why: 'the state directory’s filesystem clones files (reflinks)' }
	}
	const missing = [
		...(facts.asRoot ? [] : ['a root host']),
		...(facts.mkfsXfs
			? []
			: [`mkfs.xfs (${debianInstallCommand('xfsprogs', facts.asRoot ? 0 : undefined)})`]),
		...(facts.loopControl ? [] : ['loop devices (/dev/loop-control)']),
	]
	if (missing.length > 0) {
		return {
			mode: 'copy',
			why: `full copies: the state directory’s filesystem has no reflinks and a copy-on-write volume needs ${missing.join(', ')}`,
		}
	}
	const volumeBytes = volumeBytesFor(facts.hostFreeBytes)
	if (volumeBytes === undefined) {
		return {
			mode: 'copy',
			why: 'full copies: the state directory’s filesystem has under 1.2 GiB free for a copy-on-write volume',
		}
	}
	return {
		mode: 'volume',
		why: 'a copy-on-write XFS volume (sparse image, reflink=1) loop-mounted in the state directory; a create that finds no other sandbox on it formats and mounts it first (25–35 ms measured), which a state directory on XFS or btrfs never needs',
		volumeBytes,
	}
}

/** One registered user of the volume and whether it still lives. */
export interface VolumeUserFact {
	readonly name: string
	readonly live: boolean
}

export interface VolumeReleaseFacts {
	readonly mounted: boolean
	readonly imageExists: boolean
	readonly users: readonly VolumeUserFact[]
	/** Complete or partial checkpoints whose content is in the volume. */
	readonly checkpointsInVolume: number
}

export interface VolumeReleaseDecision {
	/** Users whose sandbox or process is gone: their registrations go. */
	readonly dropUsers: readonly string[]
	/** No live user: unmount (the loop device goes with the last reference). */
	readonly unmount: boolean
	/** No live user and no checkpoint content: the image itself goes. */
	readonly removeImage: boolean
}

/** What to undo of the volume: never anything a live user or a checkpoint still needs. */
export function decideVolumeRelease(facts: VolumeReleaseFacts): VolumeReleaseDecision {
	const dropUsers = facts.users.filter((user) => !user.live).map((user) => user.name)
	const inUse = facts.users.some((user) => user.live)
	return {
		dropUsers,
		unmount: facts.mounted && !inUse,
		removeImage: facts.imageExists && !inUse && facts.checkpointsInVolume === 0,
	}
}

/** Whether a tool's stderr (or an error's message) says a filesystem was full. */
export function saysNoSpace(text: string): boolean {
	return /No space left on device|ENOSPC|Disk quota exceeded|EDQUOT/.test(text)
}

/** A user's registration name: a sandbox (`sbx-<id>`) or one operation of a process. */
export type VolumeUserName = `sbx-${string}` | `op-${string}`

const SANDBOX_USER = /^sbx-([0-9a-f]{12})$/
const OPERATION_USER = /^op-(\d+)-[0-9a-f]{8}$/

/** What a registration file's name says: the sandbox it names, or the operation's pid. */
export function parseVolumeUser(
	name: string,
): { readonly sandboxId: string } | { readonly pid: number } | undefined {
	const sandbox = SANDBOX_USER.exec(name)?.[1]
	if (sandbox !== undefined) return { sandboxId: sandbox }
	const pid = OPERATION_USER.exec(name)?.[1]
	return pid === undefined ? undefined : { pid: Number(pid) }
}

export interface VolumeGrowthFacts {
	/** The image's apparent size now. */
	readonly volumeBytes: number
	/** What the image occupies on the host now (its allocated blocks). */
	readonly allocatedBytes: number
	/** What the state directory's filesystem has free for this user. */
	readonly hostFreeBytes: number
	/** How much more the volume must hold. */
	readonly neededBytes: number
}

/** The least a growth adds, so a full volume is not grown a sliver at a time. */
export const MIN_VOLUME_GROWTH_BYTES = 256 * MIB

/**
 * The image's new size when the volume must hold `neededBytes` more, or undefined when the host
 * cannot give that. It grows by the larger of what is needed, a quarter of its size and 256 MiB,
 * and never so far that what the sparse image may still allocate exceeds 90% of what the host has
 * free (the same share it was made with), nor past 1 TiB: the host fills after the volume does.
 */
export function volumeGrowthTarget(facts: VolumeGrowthFacts): number | undefined {
	const step = Math.max(facts.neededBytes, facts.volumeBytes / 4, MIN_VOLUME_GROWTH_BYTES)
	const hostBound = facts.allocatedBytes + facts.hostFreeBytes * HOST_FREE_SHARE
	const wanted = Math.ceil((facts.volumeBytes + step) / MIB) * MIB
	const bytes = Math.min(wanted, Math.floor(hostBound / MIB) * MIB, MAX_VOLUME_BYTES)
	return bytes - facts.volumeBytes >= Math.max(facts.neededBytes, 1) ? bytes : undefined
}
