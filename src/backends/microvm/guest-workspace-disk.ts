/**
 * `diskLimitMb` on the microVM tier: the workspace is a raw ext4 disk of its own in the guest's
 * private directory, attached as the guest's second virtio disk. The guest's entrypoint mounts it on
 * the workspace (`NAMZU_WORKSPACE_DEVICE`), so writes past it fail with ENOSPC inside the guest,
 * while the host's disk only ever holds the sparse file. Nothing is mounted on the host, so unlike
 * the process tiers this needs no root: only `mkfs.ext4` (and `debugfs` to drop `lost+found`).
 */
import { constants } from 'node:fs'
import { access } from 'node:fs/promises'
import { join } from 'node:path'
import { DiskLimitUnavailableError } from '../machine/cgroups/limit-errors.js'
import { runProgramOrThrow } from '../machine/launch/host-tools.js'
import {
	DEFAULT_MKFS_EXT4_PATH,
	formatWorkspaceImage,
} from '../machine/workspace/workspace-disk.js'

/** The workspace disk as the guest sees it: the disk after the root disk. */
export const GUEST_WORKSPACE_DEVICE = '/dev/vdb'
const DEBUGFS_PATH = '/usr/sbin/debugfs'
/** The workload's uid and gid in the guest image (the entrypoint also chowns the mount). */
const GUEST_AGENT_OWNER = { uid: 1001, gid: 1001 } as const

/** Formats `<dir>/workspace.img` of `diskLimitMb` MiB; returns its path. Leaves nothing on failure. */
export async function prepareGuestWorkspaceDisk(
	dir: string,
	diskLimitMb: number,
	signal?: AbortSignal,
): Promise<string> {
	await access(DEFAULT_MKFS_EXT4_PATH, constants.X_OK).catch((error: unknown) => {
		throw new DiskLimitUnavailableError('mkfs-missing', diskLimitMb, DEFAULT_MKFS_EXT4_PATH, {
			cause: error,
		})
	})
	const image = join(dir, 'workspace.img')
	try {
		await formatWorkspaceImage(image, {
			diskLimitMb,
			owner: GUEST_AGENT_OWNER,
			mkfsPath: DEFAULT_MKFS_EXT4_PATH,
		})
		// mkfs's lost+found would otherwise show up in every workspace listing.
		await runProgramOrThrow(DEBUGFS_PATH, ['-w', '-R', 'rmdir lost+found', image], {
			signal: signal ?? AbortSignal.timeout(30_000),
		})
	} catch (error) {
		throw new DiskLimitUnavailableError(
			'setup-failed',
			diskLimitMb,
			error instanceof Error ? error.message : String(error),
			{ cause: error },
		)
	}
	return image
}
