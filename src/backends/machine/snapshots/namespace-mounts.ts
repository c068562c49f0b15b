/**
 * Mounts in other mount namespaces than the host's: reading a namespace's table, acting in it
 * (`nsenter` running the host's `umount`/`mount`, never a program of the namespace's root, on a
 * path reached through `/proc/<pid>/root`), and letting go of a loop-backed filesystem that a
 * foreign namespace holds a copy of.
 *
 * Why foreign copies exist: this host's mounts are private, so a mount namespace made while a
 * sandbox's workspace was mounted (another program's `unshare --mount`, a VMM's namespace) holds
 * its own copy of that mount, which no unmount on the host reaches. The copy keeps the filesystem
 * and its loop device alive until that namespace ends, so a rollback's replaced image or a
 * destroyed workspace would stay attached. Such a copy is an accident of timing: nothing there
 * uses a sandbox's workspace, so it is detached there (lazily), as in the sandbox's own namespace.
 */
import { readdir, readFile, readlink, stat } from 'node:fs/promises'
import { unescapeMountField } from '../cgroups/cgroup-layout.js'
import { HOST_TOOLS, runProgramOrThrow } from '../launch/host-tools.js'
import { deviceNumbers, type LoopBacking, loopReleased } from './loop-backing.js'

const NSENTER = '/usr/bin/nsenter'
const TOOL_TIMEOUT_MS = 30_000
/** How long a release is awaited before foreign namespaces are looked through. */
const FIRST_RELEASE_WAIT_MS = 250

/** One place a filesystem is mounted: in the host's namespace, or in another process's. */
export interface NamespaceView {
	/** A process in that namespace; undefined for the host's own. */
	readonly pid: number | undefined
	/** The mount point as that namespace's root sees it. */
	readonly mountPoint: string
}

/** One line of a mount table, as far as the callers read it. */
export interface MountEntry {
	/** `major:minor`. */
	readonly device: string
	readonly root: string
	readonly mountPoint: string
}

/** The entries of a `/proc/<pid>/mountinfo` text. */
export function parseMounts(mountinfo: string): MountEntry[] {
	const entries: MountEntry[] = []
	for (const line of mountinfo.split('\n')) {
		const fields = line.split(' ')
		const [device, root, mountPoint] = [fields[2], fields[3], fields[4]]
		if (device === undefined || root === undefined || mountPoint === undefined) continue
		entries.push({
			device,
			root: unescapeMountField(root),
			mountPoint: unescapeMountField(mountPoint),
		})
	}
	return entries
}

/** Runs `argv` (a host program) in the view's namespace, the host's root kept for the lookup. */
export function inView(view: NamespaceView, argv: readonly string[], fd3?: number): Promise<void> {
	const options = {
		signal: AbortSignal.timeout(TOOL_TIMEOUT_MS),
		...(fd3 === undefined ? {} : { fd3 }),
	}
	if (view.pid === undefined) {
		const [file, ...args] = argv
		return runProgramOrThrow(file ?? '', args, options)
	}
	const args = [`--mount=/proc/${view.pid}/ns/mnt`, '--root=/', '--', ...argv]
	return runProgramOrThrow(NSENTER, args, options)
}

/** The path of the view's mount point from the host's root (through the process's root). */
export function reach(view: NamespaceView): string {
	return view.pid === undefined ? view.mountPoint : `/proc/${view.pid}/root${view.mountPoint}`
}

/**
 * One view per mount of `device` in every mount namespace other than the host's (a process of
 * each namespace stands for it). Processes that end while they are looked at are skipped.
 */
export async function foreignViewsOf(device: string): Promise<NamespaceView[]> {
	const own = await readlink('/proc/self/ns/mnt')
	const seen = new Set([own])
	const views: NamespaceView[] = []
	for (const entry of await readdir('/proc')) {
		if (!/^\d+$/.test(entry)) continue
		const pid = Number(entry)
		const namespace = await readlink(`/proc/${pid}/ns/mnt`).catch(() => undefined)
		if (namespace === undefined || seen.has(namespace)) continue
		seen.add(namespace)
		const text = await readFile(`/proc/${pid}/mountinfo`, 'utf8').catch(() => undefined)
		if (text === undefined) continue
		for (const mount of parseMounts(text)) {
			if (mount.device === device) views.push({ pid, mountPoint: mount.mountPoint })
		}
	}
	return views
}

/**
 * Waits until `loop` lets its backing file go (`loopReleased`), at most `timeoutMs`; if it has
 * not after a short while, detaches the copies foreign namespaces hold of its filesystem first.
 * Answers whether it was released. Only for a filesystem no longer mounted where it belongs.
 */
export async function loopReleasedEverywhere(
	loop: LoopBacking,
	timeoutMs: number,
): Promise<boolean> {
	const first = Math.min(FIRST_RELEASE_WAIT_MS, timeoutMs)
	if (await loopReleased(loop, first)) return true
	const device = await stat(loop.device).then(
		(info) => deviceNumbers(info.rdev),
		() => undefined,
	)
	if (device === undefined) return true
	for (const view of await foreignViewsOf(device)) {
		// Already gone with its namespace, or detached by an earlier view: nothing left to do.
		await inView(view, [HOST_TOOLS.umount, '-c', '-n', '-l', reach(view)]).catch(() => undefined)
	}
	return loopReleased(loop, Math.max(0, timeoutMs - first))
}
