/**
 * A caller-supplied workspace (or a writable `hostDir` layout slot) on a root host belongs to the
 * sandbox uid for the sandbox's lifetime and is given back at destroy:
 *
 * - hand-over: every entry whose owner differs from the workspace root's is recorded
 *   (`ownership-record.ts`), then every entry but FIFOs, sockets and device nodes is chowned to the
 *   sandbox uid (`find -P … -exec chown -h`: never through a symlink); those keep their owner, so
 *   any such entry the sandbox uid owns at give-back is one the sandbox made. The kernel clears
 *   set-id bits of files on chown, so a set-id file of the workspace loses them.
 * - give-back: FIFOs, sockets and device nodes the sandbox made are removed (nothing of theirs is
 *   data, and a root-owned FIFO or socket left in a caller's tree is a trap for the next program
 *   that opens it); recorded entries the sandbox uid still owns get their recorded owner (only when
 *   the directory holding them is still the real one, never through a symlink the sandbox planted);
 *   every other entry the sandbox uid owns — including all it created, symbolic links among them —
 *   gets the workspace root's original owner with `lchown` semantics (`chown -h`: a link is never
 *   followed, so a planted `x -> /etc/shadow` changes only the link); then set-uid/set-gid bits are
 *   cleared on every entry (`chmod -R ug-s`, which skips symlinks), so nothing planted there runs
 *   with anybody's privileges.
 *
 * Entries owned by anybody else are left alone, which also makes a give-back after a hand-over
 * that crashed half-way correct. Give-back runs only once every sandbox process is gone.
 */
import { closeSync, openSync } from 'node:fs'
import { lchown, lstat, realpath } from 'node:fs/promises'
import { assertHostTool, HOST_TOOLS, runHostToolOrThrow } from '../launch/host-tools.js'
import { OWNERSHIP_RECORD_FORMAT, readOwnershipRecord } from './ownership-record.js'

export interface WorkspaceOwnership {
	/** Real path of the workspace root. */
	readonly path: string
	/** Device and inode of the root when it was handed over: a replaced directory is not ours. */
	readonly dev: number
	readonly ino: number
	readonly ownerUid: number
	readonly ownerGid: number
	/** The record of differing owners (in the state directory). */
	readonly recordPath: string
}

export interface OwnershipHolder {
	readonly uid: number
	readonly gid: number
}

/** Records the differing owners into `recordPath`, then hands every entry to `holder`. */
export async function handOverWorkspace(
	ownership: WorkspaceOwnership,
	holder: OwnershipHolder,
	signal?: AbortSignal,
): Promise<void> {
	await assertHostTool('find', 'record the workspace owners')
	await assertHostTool('chown', 'hand the workspace to the sandbox uid')
	const fd = openSync(ownership.recordPath, 'wx', 0o600)
	try {
		await runHostToolOrThrow(
			'find',
			[
				ownership.path,
				'(',
				'!',
				'-uid',
				String(ownership.ownerUid),
				'-o',
				'!',
				'-gid',
				String(ownership.ownerGid),
				')',
				'-printf',
				OWNERSHIP_RECORD_FORMAT,
			],
			{ stdoutFd: fd, ...(signal ? { signal } : {}) },
		)
	} finally {
		closeSync(fd)
	}
	await runHostToolOrThrow(
		'find',
		[
			ownership.path,
			...NOT_SPECIAL,
			'-exec',
			HOST_TOOLS.chown,
			'-h',
			`${holder.uid}:${holder.gid}`,
			'{}',
			'+',
		],
		{ ...(signal ? { signal } : {}) },
	)
}

/** find(1) tests: not a FIFO, socket or device node. */
const SPECIAL = ['(', '-type', 'p', '-o', '-type', 's', '-o', '-type', 'b', '-o', '-type', 'c', ')']
const NOT_SPECIAL = ['!', ...SPECIAL]

/**
 * Removes the FIFOs, sockets and device nodes the sandbox uid owns (only the sandbox can have made
 * them: hand-over leaves such entries with their owner). find(1) never follows a symlink here.
 */
async function removeSpecialEntries(ownership: WorkspaceOwnership, holder: OwnershipHolder) {
	await runHostToolOrThrow('find', [
		ownership.path,
		'-uid',
		String(holder.uid),
		...SPECIAL,
		'-delete',
	])
}

function parentOf(path: Buffer): Buffer {
	const slash = path.lastIndexOf(0x2f)
	return slash <= 0 ? Buffer.from('/') : path.subarray(0, slash)
}

async function restoreRecordedEntries(ownership: WorkspaceOwnership, holder: OwnershipHolder) {
	const root = Buffer.from(ownership.path)
	for await (const entry of readOwnershipRecord(ownership.recordPath)) {
		const full = Buffer.concat([root, Buffer.from('/'), entry.path])
		try {
			// Every directory on the way must still be the real one: a symlink the sandbox swapped in
			// would make lchown land outside the workspace.
			const parent = parentOf(full)
			const real = await realpath(parent, { encoding: 'buffer' })
			if (!real.equals(parent)) continue
			const info = await lstat(full)
			if (info.uid !== holder.uid) continue
			await lchown(full, entry.uid, entry.gid)
		} catch {
			// Gone, renamed or too deep to name: it no longer holds anything of the original.
		}
	}
}

/** Whether the workspace root is still the directory that was handed over. */
async function sameRoot(ownership: WorkspaceOwnership): Promise<boolean> {
	try {
		const info = await lstat(ownership.path)
		return info.isDirectory() && info.dev === ownership.dev && info.ino === ownership.ino
	} catch {
		return false
	}
}

/** Gives the workspace back (see the header). Idempotent; a vanished workspace is a no-op. */
export async function giveBackWorkspace(
	ownership: WorkspaceOwnership,
	holder: OwnershipHolder,
): Promise<void> {
	if (!(await sameRoot(ownership))) return
	await assertHostTool('chown', 'give the workspace back')
	await assertHostTool('chmod', 'clear set-id bits in the workspace')
	await assertHostTool('find', 'remove the FIFOs, sockets and devices the sandbox made')
	await removeSpecialEntries(ownership, holder)
	await restoreRecordedEntries(ownership, holder)
	await runHostToolOrThrow('chown', [
		'-R',
		'-h',
		'-P',
		`--from=${holder.uid}:${holder.gid}`,
		`${ownership.ownerUid}:${ownership.ownerGid}`,
		ownership.path,
	])
	await runHostToolOrThrow('chmod', ['-R', 'ug-s', ownership.path])
}
