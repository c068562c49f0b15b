/**
 * The ephemeral workspace of a checkpointable sandbox, made where its checkpoints can share its
 * bytes: on a state directory with the copy-on-write volume (`cow-volume.ts`), the sandbox
 * registers as the volume's user `sbx-<id>`, and `sandboxes/<id>` in the volume (owned by the
 * sandbox's uid) is bound onto the workspace path — the path the sandbox sees stays
 * `<stateRoot>/workspace`, and the volume's `nosuid,nodev` carry to the bind. Recorded in the host
 * claims (`workspaceVolume`) before the registration, so teardown from any process undoes it:
 * unbind, remove the sandbox's directory in the volume, drop the registration (the last user out
 * unmounts the volume). A sized workspace (`diskLimitMb`) stays its own ext4 image
 * (`workspace-disk.ts`), whose checkpoints are copies.
 */
import { chown, mkdir, rm } from 'node:fs/promises'
import { dirname } from 'node:path'
import { HOST_TOOLS, runProgramOrThrow } from '../launch/host-tools.js'
import {
	attachVolumeUser,
	checkpointCopyMode,
	detachVolumeUser,
	volumeMounted,
} from '../snapshots/cow-volume.js'
import { volumeSandboxDir } from '../snapshots/snapshot-layout.js'
import {
	recordAndMountWorkspaceDisk,
	unmountWorkspace,
	type WorkspaceDiskInput,
} from './workspace-disk.js'

const TOOL_TIMEOUT_MS = 30_000

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
}

function run(file: string, args: readonly string[]): Promise<void> {
	return runProgramOrThrow(file, args, { signal: AbortSignal.timeout(TOOL_TIMEOUT_MS) })
}

/**
 * Gives the (empty, ephemeral) workspace its filesystem: a sized disk for `diskLimitMb`, the
 * copy-on-write volume for a checkpointable sandbox on a state directory that uses one, else the
 * state directory's own.
 */
export async function prepareEphemeralWorkspace(
	ledger: EphemeralWorkspaceRecorder,
	input: EphemeralWorkspaceInput,
): Promise<void> {
	const { diskLimitMb } = input
	if (diskLimitMb !== undefined) {
		await recordAndMountWorkspaceDisk(ledger, { ...input, diskLimitMb })
		return
	}
	if (!input.checkpointable) return
	const stateBase = dirname(input.root)
	const decision = await checkpointCopyMode(stateBase)
	if (decision.mode !== 'volume' || decision.volumeBytes === undefined) return
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
	await unmountWorkspace(root, workspace)
	const stateBase = dirname(root)
	// Still registered, so still mounted: the directory goes before the registration does.
	if (await volumeMounted(stateBase)) {
		await rm(volumeSandboxDir(stateBase, id), { recursive: true, force: true })
	}
	await detachVolumeUser(stateBase, `sbx-${id}`)
}
