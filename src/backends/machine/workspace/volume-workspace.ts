/**
 * The ephemeral workspace of a checkpointable sandbox, made where its checkpoints can share its
 * bytes: on a state directory with the copy-on-write volume (`cow-volume.ts`), the sandbox
 * registers as the volume's user `sbx-<id>`, and `sandboxes/<id>` in the volume (owned by the
 * sandbox's uid) is bound onto the workspace path — the path the sandbox sees stays
 * `<stateRoot>/workspace`, and the volume's `nosuid,nodev` carry to the bind. Recorded in the host
 * claims (`workspaceVolume`) before the registration, so teardown from any process undoes it:
 * unbind, remove the sandbox's directory in the volume, drop the registration (the last user out
 * unmounts the volume).
 *
 * A sized workspace (`diskLimitMb`) is its own ext4 image either way (`workspace-disk.ts`: the
 * limit is that filesystem's size, which nothing inside can change); on a volume state directory
 * the image lives in the volume (`sandboxes/<id>/workspace.img`, root-only, never bound into the
 * sandbox), so its checkpoints and forks clone the image (`image-checkpoint.ts`). The volume is
 * grown first when it could not hold the whole image; when it cannot grow that far the image stays
 * in the sandbox's state directory, whose checkpoints are copies.
 */
import { chown, mkdir, rm } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { HOST_TOOLS, runProgramOrThrow } from '../launch/host-tools.js'
import {
	attachVolumeUser,
	checkpointCopyMode,
	detachVolumeUser,
	volumeMounted,
} from '../snapshots/cow-volume.js'
import { ensureVolumeRoom } from '../snapshots/cow-volume-grow.js'
import { mountForkImage } from '../snapshots/fork-image.js'
import { loopBackingOf, loopsBackedIn } from '../snapshots/loop-backing.js'
import { loopReleasedEverywhere } from '../snapshots/namespace-mounts.js'
import { volumeSandboxDir } from '../snapshots/snapshot-layout.js'
import {
	mountWorkspaceDisk,
	recordAndMountWorkspaceDisk,
	unmountWorkspace,
	WORKSPACE_IMAGE,
	type WorkspaceDiskInput,
} from './workspace-disk.js'

const TOOL_TIMEOUT_MS = 30_000
const MIB = 1024 * 1024
/** How long a teardown waits for a sized workspace's loop device to be released. */
const LOOP_RELEASE_WAIT_MS = 30_000

/** Where a sandbox records its claims (the host-claims ledger). */
export interface EphemeralWorkspaceRecorder {
	record(update: {
		readonly workspaceDisk?: string
		readonly workspaceVolume?: string
	}): Promise<void>
}

export interface EphemeralWorkspaceInput extends Omit<WorkspaceDiskInput, 'diskLimitMb'> {
	readonly diskLimitMb: number | undefined
	readonly sandboxId: string
	/** The sandbox takes filesystem checkpoints (its workspace goes on the volume where there is one). */
	readonly checkpointable: boolean
	/** A fork's checkpoint id: a sized workspace starts as a clone of its image where it can. */
	readonly from?: string
}

/** The input's `seed`: a fork's image cloned from its checkpoint's (`fork-image.ts`). */
function forkSeed(
	input: EphemeralWorkspaceInput & { readonly diskLimitMb: number },
): WorkspaceDiskInput {
	const { from } = input
	if (from === undefined) return input
	const stateBase = dirname(input.root)
	return {
		...input,
		seed: (image) =>
			mountForkImage({
				stateBase,
				checkpointId: from,
				image,
				workspace: input.workspace,
				diskLimitMb: input.diskLimitMb,
				owner: input.owner,
			}),
	}
}

function run(file: string, args: readonly string[]): Promise<void> {
	return runProgramOrThrow(file, args, { signal: AbortSignal.timeout(TOOL_TIMEOUT_MS) })
}

/** What `prepareEphemeralWorkspace` made: `seeded` when a fork's workspace already holds its files. */
export type EphemeralWorkspace = 'seeded' | 'empty'

/**
 * Gives the (empty, ephemeral) workspace its filesystem: a sized disk for `diskLimitMb` (a fork's
 * cloned from its checkpoint's image where it can be: `seeded`, needing no fill), the copy-on-write
 * volume for a checkpointable sandbox on a state directory that uses one, else the state
 * directory's own.
 */
export async function prepareEphemeralWorkspace(
	ledger: EphemeralWorkspaceRecorder,
	input: EphemeralWorkspaceInput,
): Promise<EphemeralWorkspace> {
	const { diskLimitMb } = input
	if (diskLimitMb !== undefined) {
		const sized = { ...input, diskLimitMb }
		const onVolume = input.checkpointable ? await sizedWorkspaceOnVolume(ledger, sized) : 'none'
		if (onVolume !== 'none') return onVolume
		return (await recordAndMountWorkspaceDisk(ledger, forkSeed(sized))) ? 'seeded' : 'empty'
	}
	if (!input.checkpointable) return 'empty'
	const stateBase = dirname(input.root)
	const decision = await checkpointCopyMode(stateBase)
	if (decision.mode !== 'volume' || decision.volumeBytes === undefined) return 'empty'
	await ledger.record({ workspaceVolume: input.workspace })
	const id = input.sandboxId
	try {
		await attachVolumeUser(stateBase, `sbx-${id}`, decision.volumeBytes)
		const dir = volumeSandboxDir(stateBase, id)
		await mkdir(dir, { mode: 0o755 })
		await chown(dir, input.owner.uid, input.owner.gid)
		await run(HOST_TOOLS.mount, ['--bind', dir, input.workspace])
	} catch (error) {
		await releaseVolumeWorkspace(input.root, input.workspace, id).catch(() => undefined)
		throw error
	}
	return 'empty'
}

/**
 * A sized workspace whose image lives in the volume; `none` (nothing left registered) when the
 * state directory has no volume or the volume cannot grow to hold the whole image.
 */
async function sizedWorkspaceOnVolume(
	ledger: EphemeralWorkspaceRecorder,
	input: EphemeralWorkspaceInput & { readonly diskLimitMb: number },
): Promise<EphemeralWorkspace | 'none'> {
	const stateBase = dirname(input.root)
	const decision = await checkpointCopyMode(stateBase)
	if (decision.mode !== 'volume' || decision.volumeBytes === undefined) return 'none'
	await ledger.record({ workspaceVolume: input.workspace })
	const id = input.sandboxId
	try {
		await attachVolumeUser(stateBase, `sbx-${id}`, decision.volumeBytes)
		// The image is sparse, but the volume must be able to hold all of it: a write the volume
		// cannot take would be an I/O error inside the sandbox, not ENOSPC.
		if (!(await ensureVolumeRoom(stateBase, input.diskLimitMb * MIB))) {
			await releaseVolumeWorkspace(input.root, input.workspace, id)
			return 'none'
		}
		const dir = volumeSandboxDir(stateBase, id)
		await mkdir(dir, { mode: 0o700 })
		const seeded = await mountWorkspaceDisk({
			...forkSeed(input),
			image: join(dir, WORKSPACE_IMAGE),
		})
		return seeded ? 'seeded' : 'empty'
	} catch (error) {
		await releaseVolumeWorkspace(input.root, input.workspace, id).catch(() => undefined)
		throw error
	}
}

/**
 * Unbinds the workspace of the sandbox rooted at `root`, removes its directory in the volume and
 * drops its registration. Idempotent; only once every process of the sandbox is gone.
 */
export async function releaseVolumeWorkspace(
	root: string,
	workspace: string,
	id: string,
): Promise<void> {
	// A sized workspace's loop device reads an image in the volume: the volume cannot be
	// unmounted before that device is released.
	const loop = await loopBackingOf(workspace)
	const sized = loop !== undefined && basename(loop.backingFile) === WORKSPACE_IMAGE
	const stateBase = dirname(root)
	// A rollback's replaced filesystems too: held by the sandbox's namespace until it ended.
	const replaced = (await volumeMounted(stateBase))
		? await loopsBackedIn(volumeSandboxDir(stateBase, id))
		: []
	await unmountWorkspace(root, workspace)
	// A copy a foreign mount namespace made while it was mounted is detached there too.
	if (sized) await loopReleasedEverywhere(loop, LOOP_RELEASE_WAIT_MS)
	for (const old of replaced) await loopReleasedEverywhere(old, LOOP_RELEASE_WAIT_MS)
	// Still registered, so still mounted: the directory goes before the registration does.
	if (await volumeMounted(stateBase)) {
		await rm(volumeSandboxDir(stateBase, id), { recursive: true, force: true })
	}
	await detachVolumeUser(stateBase, `sbx-${id}`)
}
