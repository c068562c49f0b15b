/**
 * A fork's sized workspace made from its checkpoint's image instead of a fresh filesystem: the
 * checkpoint's `workspace.img` cloned (`cp --reflink=always`: metadata, not bytes) into the fork's
 * own image, grown to the fork's `diskLimitMb` when that is larger (`e2fsck -fp` then `resize2fs`,
 * offline: the image is not mounted yet), mounted, and given to the fork's uid. The fork's limit is
 * its own filesystem's size and its writes are copied on write into its own image. A checkpoint
 * larger than the fork, or an image that cannot be cloned here, is no seed: the fork is formatted
 * and filled by a file copy (`image-checkpoint.ts`), which refuses a fork too small for the files.
 */
import { rm, stat, truncate } from 'node:fs/promises'
import { dirname } from 'node:path'
import { runProgram, runProgramOrThrow } from '../launch/host-tools.js'
import { LocalHostToolError } from '../machine-errors.js'
import { mountWorkspaceImage, unmountWorkspace } from '../workspace/workspace-disk.js'
import { adoptWorkspace, sizedCheckpointImage } from './image-checkpoint.js'

const CP = '/usr/bin/cp'
export const E2FSCK_PATH = '/usr/sbin/e2fsck'
export const RESIZE2FS_PATH = '/usr/sbin/resize2fs'
const MIB = 1024 * 1024
const TOOL_TIMEOUT_MS = 60_000
/** A freshly formatted root's mode: the fork's workspace root keeps it, as a cold one would. */
const FRESH_ROOT_MODE = 0o40755

export interface ForkImageInput {
	readonly stateBase: string
	/** The checkpoint the fork starts from. */
	readonly checkpointId: string
	/** The fork's image file to create (it must not exist). */
	readonly image: string
	/** The fork's (empty) workspace directory to mount it on. */
	readonly workspace: string
	readonly diskLimitMb: number
	readonly owner: { readonly uid: number; readonly gid: number }
	readonly signal?: AbortSignal
}

function timed(signal: AbortSignal | undefined): { readonly signal: AbortSignal } {
	const timeout = AbortSignal.timeout(TOOL_TIMEOUT_MS)
	return { signal: signal ? AbortSignal.any([signal, timeout]) : timeout }
}

/** Lengthens a cloned, unmounted image's filesystem to `bytes` (its file first). */
async function growImage(image: string, bytes: number, signal: AbortSignal | undefined) {
	await truncate(image, bytes)
	// resize2fs wants a freshly checked filesystem; -p repairs nothing that needs asking (exit 1
	// says it fixed something harmless, like counters a clone taken while mounted carries).
	const args = ['-f', '-p', image]
	const check = await runProgram(E2FSCK_PATH, args, timed(signal))
	if (check.code !== 0 && check.code !== 1) throw new LocalHostToolError(E2FSCK_PATH, args, check)
	await runProgramOrThrow(RESIZE2FS_PATH, [image], timed(signal))
}

/**
 * Makes the fork's image a clone of the checkpoint's (grown to the fork's size) and mounts it on
 * the workspace; answers false, having made nothing, when the checkpoint is no seed for it. On a
 * failure after the clone, the workspace is unmounted and the image removed before it throws.
 */
export async function mountForkImage(input: ForkImageInput): Promise<boolean> {
	const source = await sizedCheckpointImage(input.stateBase, input.checkpointId)
	if (source === undefined) return false
	const from = await stat(source).catch(() => undefined)
	const bytes = input.diskLimitMb * MIB
	if (from === undefined || from.size > bytes) return false
	const cloned = await runProgram(CP, ['--reflink=always', '--', source, input.image], {
		...timed(input.signal),
	})
	if (cloned.code !== 0) {
		// Another filesystem (the volume could not hold this fork), or no clones there.
		await rm(input.image, { force: true })
		input.signal?.throwIfAborted()
		return false
	}
	try {
		if (from.size < bytes) await growImage(input.image, bytes, input.signal)
		await mountWorkspaceImage(input.image, input.workspace)
		await adoptWorkspace(input.workspace, { ...input.owner, mode: FRESH_ROOT_MODE }, input.signal)
		return true
	} catch (error) {
		await unmountWorkspace(dirname(input.workspace), input.workspace).catch(() => undefined)
		await rm(input.image, { force: true })
		throw error
	}
}
