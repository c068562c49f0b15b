/**
 * A rollback of a sized workspace swaps its filesystem for a clone of the checkpoint's image
 * instead of copying files back. The sandbox's commands are ended and its groups frozen first
 * (`checkpoint-verbs.ts`), so nothing inside runs while its mounts change. Everything slow is done
 * before any view of the workspace changes: the clone (`cp --reflink=always`, metadata only), its
 * loop mount at a staging point in `namzu-cow/` (`restore-*`: the reaper's pass unmounts one an
 * operation died with) and the hand-over to the sandbox's uid. Then each mount namespace holding
 * the workspace (the sandbox's own, found from its processes, and the host's) gets the old mount
 * detached and the new device mounted in its place, `nsenter` running the host's `umount`/`mount`
 * (never a program of the sandbox's root) on a path reached through `/proc/<pid>/root`; the clone
 * is renamed over the image. The replaced filesystem, unreachable by path, lives until nothing
 * references it. Nothing of the sandbox does once its processes are ended: its launchers, the agent
 * and the agent's spare shell all keep their working directory outside the workspace. So the last
 * detach releases it with its loop device, which the swap waits for (bounded: a process outside the
 * sandbox in the workspace holds it until it leaves). A workspace shaped otherwise (another size,
 * mounts on top of it, a part of it bound elsewhere, no clones) is not swapped: the caller copies.
 */
import {
	lstat,
	mkdir,
	mkdtemp,
	open,
	readFile,
	readlink,
	rename,
	rm,
	rmdir,
	stat,
} from 'node:fs/promises'
import { join } from 'node:path'
import { adoptSandboxCgroups } from '../cgroups/cgroup-limits.js'
import { CheckpointSpaceExhaustedError } from '../cgroups/limit-errors.js'
import { HOST_TOOLS, runProgram, runProgramOrThrow } from '../launch/host-tools.js'
import { LocalHostToolError } from '../machine-errors.js'
import { saysNoSpace } from './cow-volume-decision.js'
import { adoptWorkspace, clonableImageOf, sizedCheckpointImage } from './image-checkpoint.js'
import { deviceNumbers, type LoopBacking, loopBackingOf } from './loop-backing.js'
import {
	inView,
	loopReleasedEverywhere,
	type MountEntry,
	type NamespaceView,
	parseMounts,
	reach,
} from './namespace-mounts.js'
import { cowDir, RESTORE_MOUNT_PREFIX } from './snapshot-layout.js'

const CP = '/usr/bin/cp'
const TOOL_TIMEOUT_MS = 30_000
/**
 * How long a swap waits for the replaced filesystem's loop device to be released. The kernel
 * releases it as the last detach returns, so this bounds only a holder outside the sandbox.
 */
const REPLACED_RELEASE_WAIT_MS = 2_000

/**
 * The one mount of `device` in a namespace's table, when the workspace can be swapped there: its
 * whole filesystem (root `/`) and nothing mounted below it. `none` when the namespace has none;
 * undefined when it is shaped otherwise.
 */
function soleMount(mounts: readonly MountEntry[], device: string): string | 'none' | undefined {
	const own = mounts.filter((entry) => entry.device === device)
	if (own.length === 0) return 'none'
	const [only] = own
	if (own.length > 1 || only === undefined || only.root !== '/') return undefined
	const below = `${only.mountPoint.replace(/\/$/, '')}/`
	if (mounts.some((entry) => entry.mountPoint.startsWith(below))) return undefined
	return only.mountPoint
}

/** Every view of the workspace (the host's last), or undefined when one cannot be swapped. */
async function viewsOf(
	workspace: string,
	cgroupDirs: readonly string[],
): Promise<NamespaceView[] | undefined> {
	const device = deviceNumbers((await stat(workspace)).dev)
	const host = soleMount(parseMounts(await readFile('/proc/self/mountinfo', 'utf8')), device)
	if (host !== workspace) return undefined
	const hostNamespace = await readlink('/proc/self/ns/mnt')
	const seen = new Set([hostNamespace])
	const views: NamespaceView[] = []
	for (const pid of await adoptSandboxCgroups(cgroupDirs).pids()) {
		const namespace = await readlink(`/proc/${pid}/ns/mnt`).catch(() => undefined)
		if (namespace === undefined || seen.has(namespace)) continue
		seen.add(namespace)
		const text = await readFile(`/proc/${pid}/mountinfo`, 'utf8').catch(() => undefined)
		if (text === undefined) return undefined
		const mountPoint = soleMount(parseMounts(text), device)
		if (mountPoint === undefined) return undefined
		if (mountPoint !== 'none') views.push({ pid, mountPoint })
	}
	return [...views, { pid: undefined, mountPoint: workspace }]
}

function timed(): { readonly signal: AbortSignal } {
	return { signal: AbortSignal.timeout(TOOL_TIMEOUT_MS) }
}

/** Detaches the view's mount (lazily: the agent's working directory may hold it) and mounts `device` there. */
async function swapView(view: NamespaceView, device: string, deviceFd: number): Promise<void> {
	const target = reach(view)
	await inView(view, [HOST_TOOLS.umount, '-c', '-n', '-l', target])
	const source = view.pid === undefined ? device : '/proc/self/fd/3'
	const mount = [HOST_TOOLS.mount, '-c', '-n', '-t', 'ext4', '-o', 'nosuid,nodev', source, target]
	await inView(view, mount, deviceFd)
}

/**
 * Whether the replaced device let its image go (renamed over, it reads `<path> (deleted)`), a copy
 * in a foreign namespace detached if one holds it.
 */
function replacedReleased(replaced: LoopBacking): Promise<boolean> {
	const renamed = { ...replaced, backingFile: `${replaced.backingFile} (deleted)` }
	return loopReleasedEverywhere(renamed, REPLACED_RELEASE_WAIT_MS)
}

export interface ImageSwapRequest {
	readonly stateBase: string
	readonly checkpointId: string
	readonly workspace: string
	/** The sandbox's `<sandbox>/` cgroup directories: its processes name its namespaces. */
	readonly cgroupDirs: readonly string[]
	readonly signal?: AbortSignal
}

interface Staged {
	readonly image: string
	readonly next: string
	readonly staging: string
	readonly device: string
}

/** The clone of the checkpoint's image beside the workspace's, mounted at a staging point. */
async function stage(request: ImageSwapRequest, from: string, image: string): Promise<Staged> {
	const next = `${image}.next`
	await mkdir(cowDir(request.stateBase), { recursive: true, mode: 0o700 })
	const staging = await mkdtemp(join(cowDir(request.stateBase), RESTORE_MOUNT_PREFIX))
	const options = request.signal ? { signal: request.signal } : {}
	try {
		const cloned = await runProgram(CP, ['--reflink=always', '--', from, next], options)
		if (cloned.code !== 0) {
			if (saysNoSpace(cloned.stderr)) {
				throw new CheckpointSpaceExhaustedError('rollback', cowDir(request.stateBase))
			}
			throw new LocalHostToolError(CP, [from, next], cloned)
		}
		await runProgramOrThrow(HOST_TOOLS.mount, ['-o', 'loop,nosuid,nodev', next, staging], timed())
		const loop = await loopBackingOf(staging)
		if (loop === undefined)
			throw new LocalHostToolError(HOST_TOOLS.mount, [next], {
				code: null,
				signal: null,
				stderr: 'no loop device',
			})
		await adoptWorkspace(staging, await lstat(request.workspace), request.signal)
		return { image, next, staging, device: loop.device }
	} catch (error) {
		await unstage({ image, next, staging, device: '' })
		throw error
	}
}

/** Undoes `stage` (idempotent): the staging mount, its directory and, unless renamed, the clone. */
async function unstage(staged: Staged): Promise<void> {
	await runProgram(HOST_TOOLS.umount, [staged.staging], timed()).catch(() => undefined)
	await rmdir(staged.staging).catch(() => undefined)
	await rm(staged.next, { force: true })
}

/**
 * Rolls the sized workspace back by swapping in a clone of the checkpoint's image; false, having
 * changed nothing, when it cannot be swapped (the caller copies). The sandbox's processes are
 * ended and its groups frozen. A failure once views change mounts the new filesystem wherever
 * the old one was detached, so no view is left without a workspace, and then throws.
 */
export async function swapToCheckpointImage(request: ImageSwapRequest): Promise<boolean> {
	const from = await sizedCheckpointImage(request.stateBase, request.checkpointId)
	const image = await clonableImageOf(request.stateBase, request.workspace)
	if (from === undefined || image === undefined) return false
	const [source, target] = await Promise.all([stat(from).catch(() => undefined), stat(image)])
	if (source === undefined || source.size !== target.size || source.dev !== target.dev) return false
	const views = await viewsOf(request.workspace, request.cgroupDirs)
	if (views === undefined) return false
	const replaced = await loopBackingOf(request.workspace)
	const staged = await stage(request, from, image)
	const handle = await open(staged.device, 'r')
	try {
		request.signal?.throwIfAborted()
		// From here on views change. A view that fails is not left behind alone: the others are
		// still swapped (the new filesystem is complete), and the error is thrown afterwards.
		let failure: unknown
		for (const view of views) {
			try {
				await swapView(view, staged.device, handle.fd)
				// The host's mount reads the clone now: it takes the image's name.
				if (view.pid === undefined) await rename(staged.next, staged.image)
			} catch (error) {
				failure ??= error
			}
		}
		if (failure !== undefined) throw failure
		if (replaced !== undefined) await replacedReleased(replaced)
		return true
	} finally {
		await handle.close()
		await unstage(staged)
	}
}
