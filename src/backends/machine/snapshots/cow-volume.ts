/**
 * The copy-on-write volume of a state directory whose own filesystem has no reflinks (ext4): a
 * sparse XFS image (`reflink=1`) at `namzu-cow/volume.img`, loop-mounted `nosuid,nodev,discard` on
 * `namzu-cow/mnt`, holding the workspaces of checkpointable sandboxes (`sandboxes/<id>`, bound onto
 * each workspace path) and the checkpoints' content (`checkpoints/<id>`), so a capture, a fork and
 * a rollback are `cp --reflink` clones: metadata, not bytes.
 *
 * Lifecycle. Every user registers in `namzu-cow/users/` before it relies on the mount — a sandbox
 * as `sbx-<id>` for its life, an operation (a deletion, a restore into a workspace elsewhere) as
 * `op-<pid>-<rand>` naming its process — and the last user to leave unmounts it; the loop device
 * (autoclear) goes with the mount. Mount, unmount and every registration change happen under
 * `namzu-cow/lock`, held through `file-lock.ts` (a `flock(1)` child that exits when this process
 * does), so a SIGKILLed host never holds it. A host killed while a user is registered leaves the
 * volume mounted; the reaper (`collectVolumeGarbage`) drops users whose sandbox state root or
 * process is gone, sweeps what no user or checkpoint names, and unmounts. The image itself goes
 * once no user and no checkpoint is left. `volume-workspace.ts` binds workspaces; the store
 * (`checkpoint-store.ts`) stays the one owner of checkpoint ids, records and partials.
 */
import { randomBytes } from 'node:crypto'
import { constants } from 'node:fs'
import {
	access,
	chmod,
	mkdir,
	open,
	readdir,
	readFile,
	rm,
	rmdir,
	stat,
	statfs,
	writeFile,
} from 'node:fs/promises'
import { join } from 'node:path'
import { ensurePrivateDirectory } from '../claims/claim-locks.js'
import { FLOCK_PATH, takeFileLock } from '../claims/file-lock.js'
import { isProcessAlive, readProcessIdentity } from '../claims/process-identity.js'
import { HOST_TOOLS, runProgramOrThrow } from '../launch/host-tools.js'
import { LocalHostToolError } from '../machine-errors.js'
import {
	type CopyModeDecision,
	decideCopyMode,
	decideVolumeRelease,
	parseVolumeUser,
	type VolumeUserFact,
	type VolumeUserName,
} from './cow-volume-decision.js'
import { loopBackingOf } from './loop-backing.js'
import { loopReleasedEverywhere } from './namespace-mounts.js'
import {
	CHECKPOINT_ID_PATTERN,
	COW_DIR_NAME,
	checkpointStoreDir,
	cowDir,
	IN_VOLUME_MARKER,
	PARTIAL_PREFIX,
	RESTORE_MOUNT_PREFIX,
	volumeMountPath,
} from './snapshot-layout.js'

export const MKFS_XFS_PATH = '/usr/sbin/mkfs.xfs'
const CP = '/usr/bin/cp'
const LOOP_CONTROL = '/dev/loop-control'
const IMAGE = 'volume.img'
const USERS = 'users'
const LOCK = 'lock'
const LOCK_WAIT_MS = 120_000
const TOOL_TIMEOUT_MS = 60_000
/** How long an unmount waits for the volume's loop device to be released. */
const VOLUME_RELEASE_WAIT_MS = 5_000

const modes = new Map<string, Promise<CopyModeDecision>>()

async function executable(path: string): Promise<boolean> {
	return access(path, constants.X_OK).then(
		() => true,
		() => false,
	)
}

/** Whether `cp --reflink=always` works in `dir` (a probe file, removed either way). */
async function probeClones(dir: string): Promise<boolean> {
	const probe = join(dir, `.namzu-reflink-probe-${process.pid}-${randomBytes(4).toString('hex')}`)
	try {
		await writeFile(probe, 'probe', { mode: 0o600 })
		await runProgramOrThrow(CP, ['--reflink=always', '--', probe, `${probe}.clone`], {
			signal: AbortSignal.timeout(TOOL_TIMEOUT_MS),
		})
		return true
	} catch {
		return false
	} finally {
		await rm(probe, { force: true })
		await rm(`${probe}.clone`, { force: true })
	}
}

async function decideFor(stateBase: string): Promise<CopyModeDecision> {
	const free = await statfs(stateBase).catch(() => undefined)
	return decideCopyMode({
		stateDirClones: await probeClones(stateBase),
		asRoot: process.getuid?.() === 0,
		mkfsXfs: await executable(MKFS_XFS_PATH),
		loopControl: await access(LOOP_CONTROL).then(
			() => true,
			() => false,
		),
		hostFreeBytes: free === undefined ? 0 : free.bavail * free.bsize,
	})
}

/** How this state directory's checkpoints are copied; probed once per process, then cached. */
export function checkpointCopyMode(stateBase: string): Promise<CopyModeDecision> {
	let decided = modes.get(stateBase)
	if (decided === undefined) {
		decided = decideFor(stateBase)
		modes.set(stateBase, decided)
		decided.catch(() => modes.delete(stateBase))
	}
	return decided
}

/** The volume's sparse image. */
export function volumeImagePath(stateBase: string): string {
	return join(cowDir(stateBase), IMAGE)
}

/**
 * Runs `work` holding the volume's lock (`flock(1)`, released if this process dies). Not
 * reentrant: `work` never takes it again.
 */
export async function withVolumeLock<T>(stateBase: string, work: () => Promise<T>): Promise<T> {
	const dir = await ensurePrivateDirectory(stateBase, COW_DIR_NAME, 0o700)
	const hold = await takeFileLock(join(dir, LOCK), { waitMs: LOCK_WAIT_MS })
	if (hold === undefined) {
		throw new LocalHostToolError(FLOCK_PATH, ['-x', join(dir, LOCK)], {
			code: 1,
			signal: null,
			stderr: `lock not taken in ${LOCK_WAIT_MS} ms`,
		})
	}
	try {
		return await work()
	} finally {
		await hold.release()
	}
}

/** Whether the volume is mounted on its mount point (a different device from its parent). */
export async function volumeMounted(stateBase: string): Promise<boolean> {
	try {
		const [inner, outer] = await Promise.all([
			stat(volumeMountPath(stateBase)),
			stat(cowDir(stateBase)),
		])
		return inner.dev !== outer.dev
	} catch {
		return false
	}
}

/** Whether `path` lies on the mounted volume (a workspace bound from it, say). */
export async function onVolume(stateBase: string, path: string): Promise<boolean> {
	if (!(await volumeMounted(stateBase))) return false
	const [volume, entry] = await Promise.all([stat(volumeMountPath(stateBase)), stat(path)])
	return volume.dev === entry.dev
}

function run(file: string, args: readonly string[]): Promise<void> {
	return runProgramOrThrow(file, args, { signal: AbortSignal.timeout(TOOL_TIMEOUT_MS) })
}

/** Makes the sparse image (if absent) and mounts it; under the lock. */
async function mountVolume(stateBase: string, volumeBytes: number): Promise<void> {
	const image = volumeImagePath(stateBase)
	const mountPath = volumeMountPath(stateBase)
	const exists = await stat(image).then(
		() => true,
		() => false,
	)
	if (!exists) {
		const file = await open(image, 'wx', 0o600)
		try {
			await file.truncate(volumeBytes)
		} finally {
			await file.close()
		}
		await run(MKFS_XFS_PATH, ['-q', '-m', 'reflink=1', image]).catch(async (error: unknown) => {
			await rm(image, { force: true })
			throw error
		})
	}
	await mkdir(mountPath, { mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
		if (error.code !== 'EEXIST') throw error
	})
	// discard: what is deleted inside is punched out of the sparse image, so the host gets it back.
	await run(HOST_TOOLS.mount, ['-o', 'loop,discard,nosuid,nodev', image, mountPath])
	await chmod(mountPath, 0o700)
	for (const name of ['sandboxes', 'checkpoints']) {
		await mkdir(join(mountPath, name), { mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
			if (error.code !== 'EEXIST') throw error
		})
	}
}

function usersDir(stateBase: string): string {
	return join(cowDir(stateBase), USERS)
}

/**
 * Registers `user` and makes sure the volume is mounted; answers the mount path. The registration
 * comes first, so a host killed in between leaves a record the reaper finds.
 */
export async function attachVolumeUser(
	stateBase: string,
	user: VolumeUserName,
	volumeBytes: number,
): Promise<string> {
	return withVolumeLock(stateBase, async () => {
		await mkdir(usersDir(stateBase), { mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
			if (error.code !== 'EEXIST') throw error
		})
		const self = await readProcessIdentity(process.pid)
		await writeFile(
			join(usersDir(stateBase), user),
			`${JSON.stringify(self ?? { pid: process.pid })}\n`,
			{
				mode: 0o600,
			},
		)
		if (!(await volumeMounted(stateBase))) {
			try {
				await mountVolume(stateBase, volumeBytes)
			} catch (error) {
				await rm(join(usersDir(stateBase), user), { force: true })
				throw error
			}
		}
		return volumeMountPath(stateBase)
	})
}

/** Whether a registered user still lives: a sandbox while `sandboxLive`, an operation's process. */
async function userFact(
	stateBase: string,
	name: string,
	sandboxLive: (sandboxId: string) => Promise<boolean>,
): Promise<VolumeUserFact | undefined> {
	const parsed = parseVolumeUser(name)
	if (parsed === undefined) return undefined
	if ('sandboxId' in parsed) return { name, live: await sandboxLive(parsed.sandboxId) }
	try {
		const raw: unknown = JSON.parse(await readFile(join(usersDir(stateBase), name), 'utf8'))
		const startTime: unknown =
			typeof raw === 'object' && raw !== null ? Reflect.get(raw, 'startTime') : undefined
		const live = typeof startTime === 'string' && isProcessAlive({ pid: parsed.pid, startTime })
		return { name, live }
	} catch {
		return { name, live: false }
	}
}

/** The store's checkpoints (complete or partial) whose content is in the volume. */
async function checkpointsInVolume(stateBase: string): Promise<Set<string>> {
	const store = checkpointStoreDir(stateBase)
	const found = new Set<string>()
	for (const name of await readdir(store).catch(() => [] as string[])) {
		const id = name.startsWith(PARTIAL_PREFIX) ? name.slice(PARTIAL_PREFIX.length) : name
		if (!CHECKPOINT_ID_PATTERN.test(id)) continue
		if (
			await stat(join(store, name, IN_VOLUME_MARKER)).then(
				() => true,
				() => false,
			)
		)
			found.add(id)
	}
	return found
}

/**
 * Inside the mounted volume, what nobody names: a sandbox directory without a registered user, a
 * checkpoint's content without a store entry (complete or partial).
 */
async function sweepVolume(
	stateBase: string,
	users: ReadonlySet<string>,
	dryRun: boolean,
): Promise<string[]> {
	const mountPath = volumeMountPath(stateBase)
	const store = checkpointStoreDir(stateBase)
	const swept: string[] = []
	for (const id of await readdir(join(mountPath, 'sandboxes')).catch(() => [] as string[])) {
		if (users.has(`sbx-${id}`)) continue
		swept.push(join(mountPath, 'sandboxes', id))
	}
	for (const id of await readdir(join(mountPath, 'checkpoints')).catch(() => [] as string[])) {
		const named = await Promise.all(
			[id, `${PARTIAL_PREFIX}${id}`].map((name) =>
				stat(join(store, name)).then(
					() => true,
					() => false,
				),
			),
		)
		if (!named.includes(true)) swept.push(join(mountPath, 'checkpoints', id))
	}
	if (!dryRun) for (const path of swept) await rm(path, { recursive: true, force: true })
	return swept
}

/**
 * A sized checkpoint's image mounted read-only for a restore (`namzu-cow/restore-*`) by an
 * operation that died before unmounting it: with no live user left, none is in use.
 */
async function unmountRestoreMounts(stateBase: string, dryRun: boolean): Promise<string[]> {
	const found: string[] = []
	for (const name of await readdir(cowDir(stateBase)).catch(() => [] as string[])) {
		if (!name.startsWith(RESTORE_MOUNT_PREFIX)) continue
		const path = join(cowDir(stateBase), name)
		if (!dryRun) {
			await run(HOST_TOOLS.umount, [path]).catch(() => undefined)
			await rmdir(path).catch(() => undefined)
		}
		found.push(path)
	}
	return found
}

export interface VolumeCollection {
	/** Registrations dropped, contents swept, and the mount / image undone. */
	readonly removed: readonly string[]
}

/**
 * Unmounts the volume and waits (bounded) for its loop device to go: a copy of the mount that a
 * foreign mount namespace made meanwhile is detached there, or the next mount of the same image
 * would meet a filesystem still attached.
 */
async function unmountVolume(stateBase: string): Promise<void> {
	const loop = await loopBackingOf(volumeMountPath(stateBase))
	await run(HOST_TOOLS.umount, [volumeMountPath(stateBase)])
	if (loop !== undefined) await loopReleasedEverywhere(loop, VOLUME_RELEASE_WAIT_MS)
}

/**
 * Under the lock: drops users that are gone, sweeps the mounted volume, unmounts it when no user is
 * left and removes the image when no checkpoint's content is in it either.
 */
async function releaseUnused(
	stateBase: string,
	sandboxLive: (sandboxId: string) => Promise<boolean>,
	dryRun: boolean,
): Promise<string[]> {
	const names = await readdir(usersDir(stateBase)).catch(() => [] as string[])
	const users: VolumeUserFact[] = []
	for (const name of names) {
		const fact = await userFact(stateBase, name, sandboxLive)
		if (fact) users.push(fact)
	}
	const mounted = await volumeMounted(stateBase)
	const imageExists = await stat(volumeImagePath(stateBase)).then(
		() => true,
		() => false,
	)
	const inVolume = await checkpointsInVolume(stateBase)
	const decision = decideVolumeRelease({
		mounted,
		imageExists,
		users,
		checkpointsInVolume: inVolume.size,
	})
	const removed = decision.dropUsers.map((name) => join(usersDir(stateBase), name))
	if (!dryRun) for (const path of removed) await rm(path, { force: true })
	if (mounted) {
		const live = new Set(users.filter((user) => user.live).map((user) => user.name))
		removed.push(...(await sweepVolume(stateBase, live, dryRun)))
	}
	if (decision.unmount) {
		removed.push(...(await unmountRestoreMounts(stateBase, dryRun)))
		if (!dryRun) await unmountVolume(stateBase)
		removed.push(volumeMountPath(stateBase))
	}
	if (decision.removeImage) {
		if (!dryRun) await rm(volumeImagePath(stateBase), { force: true })
		removed.push(volumeImagePath(stateBase))
	}
	return removed
}

/**
 * Drops `user`'s registration; the last user out unmounts the volume (and removes the image when
 * no checkpoint's content is in it). Other registered sandboxes count as live here: only the
 * reaper judges them gone.
 */
export async function detachVolumeUser(stateBase: string, user: VolumeUserName): Promise<void> {
	if (
		!(await stat(cowDir(stateBase)).then(
			() => true,
			() => false,
		))
	)
		return
	await withVolumeLock(stateBase, async () => {
		await rm(join(usersDir(stateBase), user), { force: true })
		await releaseUnused(stateBase, async () => true, false)
	})
}

/**
 * The reaper's pass: users whose sandbox (`sandboxLive` false: its state root is gone) or process
 * is gone are dropped, what no one names is swept, and an unused volume is unmounted.
 */
export async function collectVolumeGarbage(
	stateBase: string,
	sandboxLive: (sandboxId: string) => Promise<boolean>,
	dryRun: boolean,
): Promise<string[]> {
	if (
		!(await stat(cowDir(stateBase)).then(
			() => true,
			() => false,
		))
	)
		return []
	return withVolumeLock(stateBase, () => releaseUnused(stateBase, sandboxLive, dryRun))
}

/** Runs `work` with the volume mounted for it (an operation's registration around it). */
export async function withVolume<T>(
	stateBase: string,
	volumeBytes: number,
	work: (mountPath: string) => Promise<T>,
): Promise<T> {
	const user: VolumeUserName = `op-${process.pid}-${randomBytes(4).toString('hex')}`
	const mountPath = await attachVolumeUser(stateBase, user, volumeBytes)
	try {
		return await work(mountPath)
	} finally {
		await detachVolumeUser(stateBase, user)
	}
}
