/**
 * Reads the host facts the sandbox root is planned from (`sandbox-root.ts`): how the host lays
 * out `/bin`, `/lib*` (real directories, or symlinks into /usr on merged-/usr systems), which
 * secrets exist in `/etc`, and what a list of paths to hide resolves to.
 */
import { lstat, readdir, readlink, realpath, stat } from 'node:fs/promises'
import { join } from 'node:path'
import {
	ETC_SECRET_ENTRIES,
	type HostRootLayout,
	type MaskTarget,
	SSH_HOST_KEY_PREFIX,
	SYS_CPU_DIR,
	SYSTEM_ENTRIES,
	type SystemEntry,
} from './sandbox-root.js'

async function systemEntry(path: string): Promise<SystemEntry | undefined> {
	try {
		const info = await lstat(path)
		if (info.isSymbolicLink()) return { path, kind: 'symlink', target: await readlink(path) }
		if (info.isDirectory()) return { path, kind: 'dir' }
	} catch {
		// Absent on this host.
	}
	return undefined
}

/**
 * What hiding `path` has to cover: the path itself, or — for a symlink — what it resolves to
 * (a mount over a symlink would land wherever it points). Undefined when nothing is there.
 */
export async function maskTargetOf(path: string): Promise<MaskTarget | undefined> {
	try {
		const info = await lstat(path)
		if (!info.isSymbolicLink()) return { path, kind: info.isDirectory() ? 'dir' : 'file' }
		const resolved = await realpath(path)
		return { path: resolved, kind: (await stat(resolved)).isDirectory() ? 'dir' : 'file' }
	} catch {
		return undefined
	}
}

export async function maskTargetsOf(paths: readonly string[]): Promise<MaskTarget[]> {
	const targets = await Promise.all(paths.map(maskTargetOf))
	return targets.filter((target): target is MaskTarget => target !== undefined)
}

async function sshHostKeys(): Promise<string[]> {
	const dir = join('/etc', SSH_HOST_KEY_PREFIX.slice(0, SSH_HOST_KEY_PREFIX.lastIndexOf('/')))
	const prefix = SSH_HOST_KEY_PREFIX.slice(SSH_HOST_KEY_PREFIX.lastIndexOf('/') + 1)
	try {
		return (await readdir(dir))
			.filter((name) => name.startsWith(prefix))
			.map((name) => join(dir, name))
	} catch {
		return []
	}
}

async function exists(path: string): Promise<boolean> {
	try {
		await stat(path)
		return true
	} catch {
		return false
	}
}

export async function readHostRootLayout(): Promise<HostRootLayout> {
	const [entries, secrets, sysCpu] = await Promise.all([
		Promise.all(SYSTEM_ENTRIES.map(systemEntry)),
		sshHostKeys().then((keys) =>
			maskTargetsOf([...ETC_SECRET_ENTRIES.map((name) => join('/etc', name)), ...keys]),
		),
		exists(SYS_CPU_DIR),
	])
	return {
		systemEntries: entries.filter((entry): entry is SystemEntry => entry !== undefined),
		etcSecrets: secrets,
		sysCpu,
	}
}
