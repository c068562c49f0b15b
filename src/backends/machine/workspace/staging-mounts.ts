/**
 * Staging binds: bwrap runs as the sandbox uid, which cannot open a bind source below a directory
 * it may not search (a workspace under `/root`, a toolchain under `~/.nvm` — `/root` is 0700).
 * Root bind-mounts such a source onto a point inside the sandbox's state directory (which the
 * sandbox uid can search), bwrap binds that, and teardown unmounts it. Every staging point is
 * recorded before it is mounted, so a crash can be undone from the record alone.
 */
import { lstat, mkdir, readFile, rmdir, stat, unlink, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import { unescapeMountField } from '../cgroups/cgroup-layout.js'
import {
	assertHostTool,
	HOST_TOOLS,
	runHostTool,
	runHostToolOrThrow,
} from '../launch/host-tools.js'
import { LocalHostToolError } from '../machine-errors.js'
import { isWithin } from '../path-containment.js'

export interface Searcher {
	readonly uid: number
	readonly gid: number
}

/** Whether `searcher` (no capabilities, no supplementary groups) may search a directory. */
export function maySearch(info: { uid: number; gid: number; mode: number }, searcher: Searcher) {
	if (info.uid === searcher.uid) return (info.mode & 0o100) !== 0
	if (info.gid === searcher.gid) return (info.mode & 0o010) !== 0
	return (info.mode & 0o001) !== 0
}

/** The first directory from `/` down to `path`'s parent that `searcher` may not search. */
export async function firstUnsearchable(
	path: string,
	searcher: Searcher,
): Promise<string | undefined> {
	const parts = path.split('/').filter((part) => part !== '')
	let current = ''
	for (const part of parts.slice(0, -1)) {
		current = `${current}/${part}`
		if (!maySearch(await stat(current), searcher)) return current
	}
	return undefined
}

/** Mount points (unescaped) listed in mountinfo text that are `prefix` or lie below it. */
export function mountPointsUnder(mountinfo: string, prefix: string): string[] {
	const found: string[] = []
	for (const line of mountinfo.split('\n')) {
		const field = line.split(' ')[4]
		if (field === undefined) continue
		const mountPoint = unescapeMountField(field)
		if (isWithin(mountPoint, prefix)) found.push(mountPoint)
	}
	return found
}

export async function hostMountPointsUnder(prefix: string): Promise<string[]> {
	return mountPointsUnder(await readFile('/proc/self/mountinfo', 'utf8'), prefix)
}

/** Bind-mounts `source` (a directory or a file) onto `target`, creating the mount point. */
export async function stageBind(source: string, target: string): Promise<void> {
	await assertHostTool('mount', 'stage a bind the sandbox uid cannot reach')
	const isDirectory = (await stat(source)).isDirectory()
	await mkdir(dirname(target), { recursive: true, mode: 0o711 })
	if (isDirectory) await mkdir(target, { mode: 0o700 })
	else await writeFile(target, '', { mode: 0o600, flag: 'wx' })
	await runHostToolOrThrow('mount', ['--bind', source, target])
}

/** Unmounts a staging point (lazily when busy) and removes it. Idempotent. */
export async function unstage(target: string): Promise<void> {
	for (let attempt = 0; attempt < 8; attempt++) {
		if (!(await hostMountPointsUnder(target)).includes(target)) break
		const args = attempt === 0 ? [target] : ['-l', target]
		const run = await runHostTool('umount', args)
		if (run.code !== 0 && attempt === 7) throw new LocalHostToolError(HOST_TOOLS.umount, args, run)
	}
	// Never recursive: a point still mounted fails here instead of emptying the source.
	try {
		if ((await lstat(target)).isDirectory()) await rmdir(target)
		else await unlink(target)
	} catch (error) {
		if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
	}
}
