/**
 * `diskLimitMb`: the ephemeral workspace becomes its own filesystem of that size — a sparse file in
 * the sandbox's state directory, formatted ext4 and loop-mounted (nosuid, nodev) on the workspace
 * path — so writes past it fail with ENOSPC inside while the host's disk is untouched. Only a root
 * host can mount, and only an ephemeral workspace can be replaced; anything else is refused by name,
 * never ignored. The layout is fixed (`<root>/workspace.img` on `<root>/workspace`), so teardown
 * from any process finds and unmounts it; a confined sandbox also records it in its host claims
 * before mounting it (`host-claims.ts`).
 */
import { constants } from 'node:fs'
import { access, open, rm, rmdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { DiskLimitUnavailableError } from '../cgroups/limit-errors.js'
import { ephemeralWorkspacePath } from '../claims/host-claims.js'
import { HOST_TOOLS, runProgramOrThrow } from '../launch/host-tools.js'
import { LocalSandboxCleanupError } from '../machine-errors.js'

export const DEFAULT_MKFS_EXT4_PATH = '/usr/sbin/mkfs.ext4'
export const WORKSPACE_IMAGE = 'workspace.img'
const MIB = 1024 * 1024
const TOOL_TIMEOUT_MS = 30_000

export interface DiskLimitContext {
	readonly diskLimitMb: number
	readonly callerOwnsWorkspace: boolean
	readonly mkfsPath: string
	readonly asRoot: boolean
}

/** Refuses, before anything is created, a disk limit this host or this workspace cannot honour. */
export async function assertDiskLimitEnforceable(context: DiskLimitContext): Promise<void> {
	const { diskLimitMb } = context
	if (context.callerOwnsWorkspace) {
		throw new DiskLimitUnavailableError('caller-workspace', diskLimitMb, '')
	}
	if (!context.asRoot) throw new DiskLimitUnavailableError('not-root', diskLimitMb, '')
	try {
		await access(context.mkfsPath, constants.X_OK)
	} catch (error) {
		throw new DiskLimitUnavailableError('mkfs-missing', diskLimitMb, context.mkfsPath, {
			cause: error,
		})
	}
}

function run(file: string, args: readonly string[]): Promise<void> {
	return runProgramOrThrow(file, args, { signal: AbortSignal.timeout(TOOL_TIMEOUT_MS) })
}

export interface WorkspaceDiskInput {
	/** `<stateDir>/namzu-sbx-<id>`. */
	readonly root: string
	/** The (empty, ephemeral) workspace directory inside `root` to mount over. */
	readonly workspace: string
	readonly diskLimitMb: number
	/** Owner of the filesystem's root directory (the sandbox's uid). */
	readonly owner: { readonly uid: number; readonly gid: number }
	readonly mkfsPath: string
	/** The image file; default `<root>/workspace.img` (a sized workspace on the volume has its own). */
	readonly image?: string
	/**
	 * Makes and mounts the image from something else (a fork's checkpoint) instead of formatting
	 * it; answers false, having made nothing, when it cannot.
	 */
	readonly seed?: (image: string) => Promise<boolean>
}

/** Where a confined sandbox records its claims (the host-claims ledger). */
export interface WorkspaceDiskRecorder {
	record(update: { readonly workspaceDisk: string }): Promise<void>
}

/**
 * Records the sized workspace in the sandbox's host claims, then mounts it: recorded first, so a
 * host that dies in between still leaves a record that teardown finds. Answers whether `seed` made it.
 */
export async function recordAndMountWorkspaceDisk(
	ledger: WorkspaceDiskRecorder,
	input: WorkspaceDiskInput,
): Promise<boolean> {
	await ledger.record({ workspaceDisk: input.workspace })
	return mountWorkspaceDisk(input)
}

/**
 * Creates `image` (it must not exist) as a sparse file of `diskLimitMb` MiB formatted ext4 with its
 * root owned by `owner`: the sized workspace's filesystem, loop-mounted here or handed to a VM as a
 * disk.
 */
export async function formatWorkspaceImage(
	image: string,
	input: Pick<WorkspaceDiskInput, 'diskLimitMb' | 'owner' | 'mkfsPath'>,
): Promise<void> {
	const file = await open(image, 'wx', 0o600)
	try {
		await file.truncate(input.diskLimitMb * MIB)
	} finally {
		await file.close()
	}
	// No journal and lazy inode tables: an ephemeral workspace needs no crash recovery, and
	// formatting stays in the tens of milliseconds.
	await run(input.mkfsPath, [
		'-q',
		'-F',
		'-m',
		'0',
		'-O',
		'^has_journal',
		'-E',
		`root_owner=${input.owner.uid}:${input.owner.gid},lazy_itable_init=1,nodiscard`,
		image,
	])
}

/**
 * Creates, formats (or seeds) and mounts the sized workspace; answers whether `seed` made it. On
 * failure nothing is left mounted.
 */
export async function mountWorkspaceDisk(input: WorkspaceDiskInput): Promise<boolean> {
	const image = input.image ?? join(input.root, WORKSPACE_IMAGE)
	try {
		if (input.seed !== undefined && (await input.seed(image))) return true
		await formatWorkspaceImage(image, input)
		await mountWorkspaceImage(image, input.workspace)
		// mkfs's lost+found would otherwise show up in every workspace listing.
		await rmdir(join(input.workspace, 'lost+found')).catch(() => undefined)
		return false
	} catch (error) {
		await releaseWorkspaceDisk(input.root, input.workspace).catch(() => undefined)
		throw new DiskLimitUnavailableError(
			'setup-failed',
			input.diskLimitMb,
			error instanceof Error ? error.message : String(error),
			{ cause: error },
		)
	}
}

/** Loop-mounts a sized workspace's image on the workspace path (nosuid, nodev). */
export function mountWorkspaceImage(image: string, workspace: string): Promise<void> {
	return run(HOST_TOOLS.mount, ['-o', 'loop,nosuid,nodev', image, workspace])
}

async function isMountPoint(path: string, parent: string): Promise<boolean> {
	try {
		const [inner, outer] = await Promise.all([stat(path), stat(parent)])
		return inner.dev !== outer.dev
	} catch {
		return false
	}
}

/**
 * Unmounts the sized workspace of the sandbox rooted at `root` (if it is mounted) and deletes its
 * image; a no-op for a sandbox that has none. Idempotent.
 */
export async function releaseWorkspaceDisk(
	root: string,
	workspace = ephemeralWorkspacePath(root),
): Promise<void> {
	await unmountWorkspace(root, workspace)
	await rm(join(root, WORKSPACE_IMAGE), { force: true })
}

/** Unmounts whatever is mounted on the workspace path (a sized disk, a bind), if anything is. */
export async function unmountWorkspace(root: string, workspace: string): Promise<void> {
	if (!(await isMountPoint(workspace, root))) return
	try {
		await run(HOST_TOOLS.umount, [workspace])
	} catch (error) {
		// Something still holds it open: detach it now, the kernel frees it with the last user.
		await run(HOST_TOOLS.umount, ['--lazy', workspace]).catch(() => {
			throw new LocalSandboxCleanupError([workspace], { cause: error })
		})
	}
}
