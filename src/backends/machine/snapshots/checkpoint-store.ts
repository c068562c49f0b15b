/**
 * Filesystem checkpoints of sandboxes on this machine, kept in `<stateDir>/namzu-checkpoints/`:
 * `<id>/checkpoint.json` (its `SandboxCheckpoint`) and its content — `<id>/content/`, or, when the
 * workspace lives on the state directory's copy-on-write volume (`cow-volume.ts`; `<id>/in-volume`
 * says so), the volume's `checkpoints/<id>/`; a `memory` checkpoint's directory holds what its
 * tier's capture wrote (the microVM tier: the VMM's RAM image and the guest's disks; gVisor: its
 * image, beside the workspace's files taken here the filesystem kind's way). A capture is written to `.partial-<id>/` and renamed into place, so a failed or
 * aborted one leaves no checkpoint (its partial directory and volume content are removed at once);
 * a capture whose host was killed leaves its partial directory, which names its capturing process
 * (`capturer.json`: pid and start time) so the reaper removes it once that process is gone
 * (`partial-checkpoints.ts`) and never while it runs; volume content no store entry names is
 * swept by the volume's reaper pass. Copies are `cp -a --reflink`: clones on the volume or a
 * reflink filesystem (btrfs, XFS), a plain copy elsewhere (ext4 without the volume). A full
 * filesystem is `CheckpointSpaceExhaustedError`. Checkpoints outlive the sandbox and the host
 * process; only `deleteCheckpoint` removes one (the reaper never does).
 */
import { randomBytes } from 'node:crypto'
import { closeSync, openSync } from 'node:fs'
import { lstat, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import {
	CheckpointNotFoundError,
	type SandboxCheckpoint,
	type SandboxCheckpointKind,
} from '../../../contract/checkpoint.js'
import {
	CheckpointSpaceExhaustedError,
	type CheckpointSpaceOperation,
} from '../cgroups/limit-errors.js'
import { readProcessIdentity } from '../claims/process-identity.js'
import { runProgramOrThrow } from '../launch/host-tools.js'
import { LocalHostToolError } from '../machine-errors.js'
import { WORKSPACE_IMAGE } from '../workspace/workspace-disk.js'
import { checkpointCopyMode, onVolume, volumeMounted, withVolume } from './cow-volume.js'
import { saysNoSpace } from './cow-volume-decision.js'
import { ensureVolumeRoom } from './cow-volume-grow.js'
import { adoptWorkspace, captureImage, clonableImageOf, restoreImage } from './image-checkpoint.js'
import {
	CAPTURER_FILE,
	CHECKPOINT_ID_PATTERN,
	CHECKPOINTS_DIR_NAME,
	CONTENT_DIR_NAME,
	checkpointStoreDir,
	IMAGE_MARKER,
	IN_VOLUME_MARKER,
	PARTIAL_PREFIX,
	volumeCheckpointDir,
	volumeMountPath,
} from './snapshot-layout.js'

export { CHECKPOINTS_DIR_NAME }

const RECORD = 'checkpoint.json'
const CP = '/usr/bin/cp'
const DU = '/usr/bin/du'
/** Room a capture that ran out of it asks the volume for (it grows by more: `volumeGrowthTarget`). */
const CAPTURE_ROOM_BYTES = 64 * 1024 * 1024
/** Entries copied per `cp` run, so a wide workspace never exceeds the argument limit. */
const COPY_BATCH = 256

function storeDir(stateBase: string): string {
	return checkpointStoreDir(stateBase)
}

/** A full filesystem as `CheckpointSpaceExhaustedError`; anything else as it is. */
function spaceError(
	error: unknown,
	operation: CheckpointSpaceOperation,
	location: string,
): unknown {
	if (error instanceof CheckpointSpaceExhaustedError) return error
	const text = error instanceof LocalHostToolError ? error.stderrTail : String(error)
	return saysNoSpace(text)
		? new CheckpointSpaceExhaustedError(operation, location, { cause: error })
		: error
}

/** The volume's size, when the state directory keeps checkpoints on a copy-on-write volume. */
async function volumeBytesOf(stateBase: string): Promise<number | undefined> {
	const decision = await checkpointCopyMode(stateBase)
	return decision.mode === 'volume' ? decision.volumeBytes : undefined
}

/** Whether the checkpoint whose store directory is `dir` carries `marker`. */
async function isMarked(dir: string, marker: string): Promise<boolean> {
	return stat(join(dir, marker)).then(
		() => true,
		() => false,
	)
}

/** What `dir` occupies on disk, in bytes (`du`). */
async function bytesStored(dir: string, scratch: string): Promise<number> {
	const fd = openSync(scratch, 'w', 0o600)
	try {
		await runProgramOrThrow(DU, ['-s', '-B1', '--', dir], { stdoutFd: fd })
	} finally {
		closeSync(fd)
	}
	const bytes = Number.parseInt(await readFile(scratch, 'utf8'), 10)
	await rm(scratch, { force: true })
	return Number.isSafeInteger(bytes) ? bytes : 0
}

/** Whether `path` is a mount point (a sized workspace), whose `lost+found` is the filesystem's. */
async function isMountPoint(path: string): Promise<boolean> {
	const [own, parent] = await Promise.all([stat(path), stat(dirname(path))])
	return own.dev !== parent.dev
}

/** The top-level names of a workspace that belong to the sandbox (not a sized disk's lost+found). */
async function workspaceEntries(workspace: string): Promise<string[]> {
	const names = await readdir(workspace)
	if (!(await isMountPoint(workspace))) return names
	return names.filter((name) => name !== 'lost+found')
}

export interface CaptureRequest {
	readonly stateBase: string
	readonly sandboxId: string
	/** The workspace's host path. */
	readonly workspace: string
	readonly label?: string
	/** Pauses the sandbox's processes; answers the resume (always called, in a finally). */
	readonly pause: () => Promise<() => Promise<void>>
	readonly signal?: AbortSignal
}

/** Copies the workspace's entries into an existing `content` directory. */
async function copyEntries(
	workspace: string,
	content: string,
	reflink: 'always' | 'auto',
	signal: AbortSignal | undefined,
): Promise<void> {
	// Each entry, so a sized workspace's lost+found stays out; `.` carries the root's mode.
	for (const name of await workspaceEntries(workspace)) {
		await runProgramOrThrow(
			CP,
			['-a', `--reflink=${reflink}`, '--', join(workspace, name), content],
			signal ? { signal } : {},
		)
	}
}

/** Copies the workspace's entries into `content` with the sandbox paused. */
async function copyPaused(
	request: CaptureRequest,
	content: string,
	reflink: 'always' | 'auto',
): Promise<void> {
	await mkdir(content, { mode: 0o700 })
	request.signal?.throwIfAborted()
	const resume = await request.pause()
	try {
		await copyEntries(request.workspace, content, reflink, request.signal)
	} finally {
		await resume()
	}
}

/**
 * Takes a checkpoint of the workspace with the sandbox paused for the copy. A workspace on the
 * copy-on-write volume is cloned into the volume (its sandbox's registration keeps it mounted); a
 * sized workspace whose image can be cloned is kept as a clone of its image (`image-checkpoint.ts`);
 * any other is copied into the store. A volume too full for the capture is grown once and the
 * capture tried again before it is refused.
 */
export function captureCheckpoint(request: CaptureRequest): Promise<SandboxCheckpoint> {
	return withVolumeGrowth(request.stateBase, () => captureOnce(request))
}

/**
 * Runs `attempt`; when it ran out of room in the copy-on-write volume, the volume is grown once
 * (`ensureVolumeRoom`: by `volumeGrowthTarget`'s step, bounded by what the host has free and
 * `MAX_VOLUME_BYTES`) and `attempt` runs again. A failed attempt leaves nothing in the volume.
 */
async function withVolumeGrowth<T>(stateBase: string, attempt: () => Promise<T>): Promise<T> {
	try {
		return await attempt()
	} catch (error) {
		if (!(error instanceof CheckpointSpaceExhaustedError)) throw error
		const grown =
			(await volumeMounted(stateBase)) &&
			error.location.startsWith(volumeMountPath(stateBase)) &&
			(await ensureVolumeRoom(stateBase, CAPTURE_ROOM_BYTES).catch(() => false))
		if (!grown) throw error
		return attempt()
	}
}

async function captureOnce(request: CaptureRequest): Promise<SandboxCheckpoint> {
	try {
		return await captureInto(request, 'filesystem', async (partial, id) => [
			await captureWorkspace(request, partial, id),
		])
	} catch (error) {
		throw spaceError(error, 'checkpoint', storeDir(request.stateBase))
	}
}

/**
 * The workspace's files into checkpoint `id` (its partial directory `partial`), the one way every
 * kind takes them: a clone of a sized workspace's image, a clone into the copy-on-write volume, or
 * a copy into the store — with the sandbox paused by `request.pause`; answers where they are.
 * Nothing is left of a failed one in the volume.
 */
async function captureWorkspace(
	request: CaptureRequest,
	partial: string,
	id: string,
): Promise<string> {
	const image = await clonableImageOf(request.stateBase, request.workspace)
	const inVolume = image
		? await onVolume(request.stateBase, image)
		: await onVolume(request.stateBase, request.workspace)
	// Before any content: the markers say where it is and what it is.
	if (image) await writeFile(join(partial, IMAGE_MARKER), '', { mode: 0o600 })
	if (inVolume) await writeFile(join(partial, IN_VOLUME_MARKER), '', { mode: 0o600 })
	const content = inVolume
		? volumeCheckpointDir(request.stateBase, id)
		: join(partial, CONTENT_DIR_NAME)
	try {
		if (image) await captureImage({ ...request, image }, content)
		else await copyPaused(request, content, inVolume ? 'always' : 'auto')
	} catch (error) {
		if (inVolume) await rm(content, { recursive: true, force: true }).catch(() => undefined)
		throw spaceError(error, 'checkpoint', content)
	}
	return content
}

export interface MemoryCaptureRequest {
	readonly stateBase: string
	readonly sandboxId: string
	readonly label?: string
	/**
	 * Writes the sandbox's whole state (the VMM's or runtime's image, and the disks it needs) into
	 * `dir`, consistently; the store owns the id, the record and the crash safety around it. A tier
	 * whose workspace is a host directory hands it to `takeWorkspace` while nothing writes to it
	 * (the sandbox stopped by its capture): the store takes its files as the filesystem kind does.
	 */
	readonly capture: (
		dir: string,
		takeWorkspace: (workspace: string) => Promise<void>,
	) => Promise<void>
	readonly signal?: AbortSignal
}

/** Nothing to pause: a memory capture's sandbox is stopped while its workspace is taken. */
const STOPPED = async () => async () => undefined

/** Takes a `memory` checkpoint: what `capture` writes into the checkpoint's directory. */
export function captureMemoryCheckpoint(request: MemoryCaptureRequest): Promise<SandboxCheckpoint> {
	return captureInto(request, 'memory', async (partial, id) => {
		request.signal?.throwIfAborted()
		let taken: string | undefined
		// The sandbox is stopped meanwhile, so a volume too full for its files is grown and they are
		// taken again, as a filesystem capture's are.
		const takeWorkspace = async (workspace: string) => {
			const taking = { ...request, workspace, pause: STOPPED }
			taken = await withVolumeGrowth(request.stateBase, () => captureWorkspace(taking, partial, id))
		}
		try {
			await request.capture(partial, takeWorkspace)
		} catch (error) {
			// The partial directory goes with the store's own cleanup; volume content is not in it.
			if (taken !== undefined && !taken.startsWith(`${partial}/`)) {
				await rm(taken, { recursive: true, force: true }).catch(() => undefined)
			}
			throw error
		}
		return taken === undefined || taken.startsWith(`${partial}/`) ? [partial] : [partial, taken]
	})
}

/**
 * The one capture protocol: a partial directory naming its capturer, `fill` (answering what to
 * measure), the record, then the rename that makes it a checkpoint; any failure leaves nothing.
 */
async function captureInto(
	request: {
		readonly stateBase: string
		readonly sandboxId: string
		readonly label?: string
		readonly signal?: AbortSignal
	},
	kind: SandboxCheckpointKind,
	fill: (partial: string, id: string) => Promise<readonly string[]>,
): Promise<SandboxCheckpoint> {
	const id = randomBytes(8).toString('hex')
	const store = storeDir(request.stateBase)
	await mkdir(store, { recursive: true, mode: 0o700 })
	const partial = join(store, `${PARTIAL_PREFIX}${id}`)
	try {
		await mkdir(partial, { mode: 0o700 })
		// Before any content: a partial directory with a live capturer is never reaped.
		const capturer = await readProcessIdentity(process.pid)
		await writeFile(
			join(partial, CAPTURER_FILE),
			`${JSON.stringify(capturer ?? { pid: process.pid })}\n`,
			{
				mode: 0o600,
			},
		)
		const measured = await fill(partial, id)
		request.signal?.throwIfAborted()
		await rm(join(partial, CAPTURER_FILE), { force: true })
		let bytes = 0
		for (const dir of measured) bytes += await bytesStored(dir, join(partial, 'du.out'))
		const checkpoint: SandboxCheckpoint = {
			id,
			kind,
			sandboxId: request.sandboxId,
			createdAt: Date.now(),
			bytes,
			label: request.label,
		}
		await writeFile(join(partial, RECORD), `${JSON.stringify(checkpoint)}\n`, { mode: 0o600 })
		await rename(partial, join(store, id))
		return checkpoint
	} catch (error) {
		await rm(partial, { recursive: true, force: true })
		if (request.signal?.aborted) throw request.signal.reason
		throw error
	}
}

/** The directory of a complete checkpoint (what a memory capture wrote is in it). */
export function checkpointDir(stateBase: string, id: string): string {
	return join(storeDir(stateBase), id)
}

function parseRecord(text: string, id: string): SandboxCheckpoint | undefined {
	try {
		const raw = JSON.parse(text) as Record<string, unknown>
		const kind = raw.kind
		if (raw.id !== id || (kind !== 'filesystem' && kind !== 'memory')) return undefined
		if (typeof raw.sandboxId !== 'string') return undefined
		if (typeof raw.createdAt !== 'number' || typeof raw.bytes !== 'number') return undefined
		const label = typeof raw.label === 'string' ? raw.label : undefined
		return {
			id,
			kind,
			sandboxId: raw.sandboxId,
			createdAt: raw.createdAt,
			bytes: raw.bytes,
			label,
		}
	} catch {
		return undefined
	}
}

/** The checkpoint of that id, or `CheckpointNotFoundError`. */
export async function readCheckpoint(stateBase: string, id: string): Promise<SandboxCheckpoint> {
	if (!CHECKPOINT_ID_PATTERN.test(id)) throw new CheckpointNotFoundError(id)
	const text = await readFile(join(storeDir(stateBase), id, RECORD), 'utf8').catch(() => undefined)
	const checkpoint = text === undefined ? undefined : parseRecord(text, id)
	if (!checkpoint) throw new CheckpointNotFoundError(id)
	return checkpoint
}

/** Every complete checkpoint of the store, oldest first. */
export async function listCheckpoints(stateBase: string): Promise<SandboxCheckpoint[]> {
	const names = await readdir(storeDir(stateBase)).catch(() => [] as string[])
	const found: SandboxCheckpoint[] = []
	for (const name of names) {
		if (!CHECKPOINT_ID_PATTERN.test(name)) continue
		const checkpoint = await readCheckpoint(stateBase, name).catch(() => undefined)
		if (checkpoint) found.push(checkpoint)
	}
	return found.sort((a, b) => a.createdAt - b.createdAt)
}

/**
 * How many checkpoints the store holds, captures in flight included (their partial directories),
 * by name only: what the provider's `maxCheckpoints` bounds.
 */
export async function countCheckpoints(stateBase: string): Promise<number> {
	const names = await readdir(storeDir(stateBase)).catch(() => [] as string[])
	return names.filter((name) => CHECKPOINT_ID_PATTERN.test(name.replace(PARTIAL_PREFIX, ''))).length
}

/** Removes a checkpoint: its record first (so it is never listed half-removed), then its files. */
export async function deleteCheckpoint(stateBase: string, id: string): Promise<void> {
	await readCheckpoint(stateBase, id)
	const dir = join(storeDir(stateBase), id)
	const doomed = join(storeDir(stateBase), `${PARTIAL_PREFIX}${id}`)
	await rename(dir, doomed)
	if (await isMarked(doomed, IN_VOLUME_MARKER)) {
		const volumeBytes = (await volumeBytesOf(stateBase)) ?? 0
		// The marker goes with the content, so the last user out sees no checkpoint left in it.
		await withVolume(stateBase, volumeBytes, async () => {
			await rm(volumeCheckpointDir(stateBase, id), { recursive: true, force: true })
			await rm(join(doomed, IN_VOLUME_MARKER), { force: true })
		})
	}
	await rm(doomed, { recursive: true, force: true })
}

/**
 * Makes `workspace` the checkpoint's content: every entry removed (a sized disk's lost+found
 * kept), the content copied in, and all of it given to the workspace root's owner (the sandbox's
 * uid: a fork's differs from its parent's). Contents are replaced, never the directory, so a
 * loop-mounted workspace stays mounted and its size still bounds what is copied. A fork's sized
 * workspace that could be cloned from a sized checkpoint's image never comes here (`fork-image.ts`).
 */
export async function restoreCheckpoint(
	stateBase: string,
	id: string,
	workspace: string,
	signal?: AbortSignal,
	operation: CheckpointSpaceOperation = 'rollback',
): Promise<void> {
	await readCheckpoint(stateBase, id)
	const dir = join(storeDir(stateBase), id)
	const copyFrom = (content: string) => replaceContents(content, workspace, signal)
	const fill = (await isMarked(dir, IMAGE_MARKER))
		? (content: string) =>
				restoreImage({
					stateBase,
					image: join(content, WORKSPACE_IMAGE),
					workspace,
					operation: operation === 'fork' ? 'fork' : 'rollback',
					...(signal ? { signal } : {}),
					copyFrom,
				})
		: copyFrom
	try {
		if (!(await isMarked(dir, IN_VOLUME_MARKER))) return await fill(join(dir, CONTENT_DIR_NAME))
		// A workspace on the volume keeps it mounted (its sandbox is registered); any other restore
		// registers itself for the copy.
		if (await onVolume(stateBase, workspace)) return await fill(volumeCheckpointDir(stateBase, id))
		const volumeBytes = (await volumeBytesOf(stateBase)) ?? 0
		await withVolume(stateBase, volumeBytes, () => fill(volumeCheckpointDir(stateBase, id)))
	} catch (error) {
		if (signal?.aborted) throw signal.reason
		throw spaceError(error, operation, workspace)
	}
}

/** Copies the entries of `content` (a mounted image's lost+found left out) into `workspace`. */
async function replaceContents(
	content: string,
	workspace: string,
	signal: AbortSignal | undefined,
): Promise<void> {
	const owner = await lstat(workspace)
	for (const name of await workspaceEntries(workspace)) {
		await rm(join(workspace, name), { recursive: true, force: true })
	}
	signal?.throwIfAborted()
	const names = await workspaceEntries(content)
	for (let start = 0; start < names.length; start += COPY_BATCH) {
		const batch = names.slice(start, start + COPY_BATCH).map((name) => join(content, name))
		await runProgramOrThrow(CP, ['-a', '--reflink=auto', '--', ...batch, workspace], {
			...(signal ? { signal } : {}),
		})
	}
	await adoptWorkspace(workspace, owner, signal)
}
