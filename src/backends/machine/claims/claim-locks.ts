/**
 * O_EXCL lock files under `<stateDir>/namzu-claims/`, each naming the sandbox that holds it: one
 * per sandbox uid in use (`uid-<uid>.lock`) and one per caller workspace handed to a sandbox
 * (`ws-<dev>-<ino>.lock`). Each names the sandbox, its state root and the taking process (pid +
 * `/proc` start time). A lock is released only by the sandbox it names, so a stale record can
 * never free a lock somebody else holds. The directory must be ours alone: a directory another
 * user planted in a shared /tmp would let them forge or delete locks.
 */
import { lstat, mkdir, open, readFile, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { LocalStateEntryUnsafeError } from '../machine-errors.js'
import { readProcessIdentity } from './process-identity.js'

export const CLAIMS_DIR_NAME = 'namzu-claims'

export function uidLockName(uid: number): string {
	return `uid-${uid}.lock`
}

export function workspaceLockName(dev: number, ino: number): string {
	return `ws-${dev}-${ino}.lock`
}

export interface LockOwner {
	readonly id: string
	readonly stateRoot: string
}

/** Creates (once) and verifies a private directory `<base>/<name>` owned by this process's uid. */
export async function ensurePrivateDirectory(
	base: string,
	name: string,
	mode: number,
): Promise<string> {
	const dir = join(base, name)
	try {
		await mkdir(dir, { mode })
	} catch (error) {
		if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
	}
	const info = await lstat(dir)
	const uid = process.getuid?.() ?? 0
	if (!info.isDirectory()) throw new LocalStateEntryUnsafeError(dir, 'not a directory')
	if (info.uid !== uid)
		throw new LocalStateEntryUnsafeError(dir, `owned by uid ${info.uid}, not ${uid}`)
	if ((info.mode & 0o022) !== 0) {
		throw new LocalStateEntryUnsafeError(dir, 'writable by group or others')
	}
	return dir
}

export function claimsDirectory(stateBase: string): Promise<string> {
	return ensurePrivateDirectory(stateBase, CLAIMS_DIR_NAME, 0o700)
}

/** Takes `<dir>/<name>`; resolves its path, or undefined when somebody holds it already. */
export async function takeLock(
	dir: string,
	name: string,
	owner: LockOwner,
): Promise<string | undefined> {
	const path = join(dir, name)
	let handle: Awaited<ReturnType<typeof open>>
	try {
		handle = await open(path, 'wx', 0o600)
	} catch (error) {
		if ((error as NodeJS.ErrnoException).code === 'EEXIST') return undefined
		throw error
	}
	try {
		const self = await readProcessIdentity(process.pid)
		const record = {
			id: owner.id,
			stateRoot: owner.stateRoot,
			pid: process.pid,
			...(self ? { pidStartTime: self.startTime } : {}),
			takenAtMs: Date.now(),
		}
		await handle.writeFile(`${JSON.stringify(record)}\n`)
	} finally {
		await handle.close()
	}
	return path
}

/** The sandbox id a lock file names, or undefined when it is missing or unreadable. */
export async function lockHolder(path: string): Promise<string | undefined> {
	try {
		const raw: unknown = JSON.parse(await readFile(path, 'utf8'))
		if (typeof raw !== 'object' || raw === null) return undefined
		const id: unknown = Reflect.get(raw, 'id')
		return typeof id === 'string' ? id : undefined
	} catch {
		return undefined
	}
}

/** Removes the lock if (and only if) it names sandbox `id`. Idempotent. */
export async function releaseLock(path: string, id: string): Promise<void> {
	if ((await lockHolder(path)) !== id) return
	await unlink(path).catch((error: NodeJS.ErrnoException) => {
		if (error.code !== 'ENOENT') throw error
	})
}
