/**
 * Opening what the jail admitted, closing the check-then-open race where Node allows it. The jail
 * (jail.ts) checks a path; the workload can then swap one of its components for a symlink before
 * the op opens it. So every op verifies what it actually opened: the descriptor's kernel path
 * (`/proc/self/fd/<fd>`) must still be inside the jail root — after an open and before a byte is
 * returned, before a byte is written, and again before a rename puts a file into place. The last
 * component is opened with `O_NOFOLLOW` unless the jail saw it as a symlink, and everything a write
 * creates or renames is named relative to a held, verified directory descriptor (`entryOf`), so a
 * component swapped after the check cannot redirect it.
 *
 * What stays open: a process running inside the sandbox sees the same mounts as the agent, so the
 * worst a swap can do is make the agent act elsewhere inside the sandbox; the window between the
 * last verification and the syscall after it is a few microseconds.
 */
import { closeSync, constants, mkdirSync, openSync } from 'node:fs'
import { type FileHandle, open } from 'node:fs/promises'
import { AGENT_REFUSAL, formatRefusal } from '../../wire/refusals.js'
import { OpRefusal } from '../handler/op-refusal.js'
import { errnoCode, fsRefusal } from './fs-refusal.js'
import {
	isWithin,
	type JailConfig,
	type JailedPath,
	pathEscapesWorkspace,
	resolveJailedPath,
} from './jail.js'
import { descriptorPath, entryOf, O_PATH, walkToNearest } from './physical-walk.js'

/**
 * Throws `path_escapes_workspace` (naming `shown`, the path as the caller gave it) unless the open
 * descriptor `fd` is inside `realRoot` right now.
 */
export function assertDescriptorWithin(fd: number, realRoot: string, shown: string): void {
	let real: string
	try {
		real = descriptorPath(fd)
	} catch {
		throw pathEscapesWorkspace(shown)
	}
	if (!isWithin(realRoot, real)) throw pathEscapesWorkspace(shown)
}

/**
 * Opens the jailed path with `flags` (plus `O_NOFOLLOW` when its last component was not a symlink
 * at check time) and verifies the descriptor before handing it out. A last component that turned
 * into a symlink since the check is an escape, not an `ELOOP`.
 */
export async function openJailedFile(
	jailed: JailedPath,
	shown: string,
	flags: number,
	mode?: number,
): Promise<FileHandle> {
	const noFollow = jailed.finalIsLink ? 0 : constants.O_NOFOLLOW
	let handle: FileHandle
	try {
		handle = await open(jailed.path, flags | noFollow, mode)
	} catch (error) {
		if (noFollow !== 0 && errnoCode(error) === 'ELOOP') throw pathEscapesWorkspace(shown)
		throw error
	}
	try {
		assertDescriptorWithin(handle.fd, jailed.realRoot, shown)
	} catch (error) {
		await handle.close().catch(() => undefined)
		throw error
	}
	return handle
}

/**
 * What a reading op opens first: `path` through the jail for reading, read-only and `O_NONBLOCK`
 * (so a fifo cannot hang the open; regular files and directories ignore it), plus `extraFlags`;
 * any failure is the op's refusal.
 */
export async function openJailedForRead(
	config: JailConfig,
	path: unknown,
	extraFlags = 0,
): Promise<FileHandle> {
	const jailed = resolveJailedPath(config, path, 'read')
	try {
		return await openJailedFile(
			jailed,
			String(path),
			constants.O_RDONLY | constants.O_NONBLOCK | extraFlags,
		)
	} catch (error) {
		throw fsRefusal(error)
	}
}

/**
 * A directory inside the jail held open: names below it (`entry`) resolve from the descriptor,
 * not from its path, and `verify` checks it is still inside the root.
 */
export class JailedDirectory {
	readonly handle: FileHandle
	readonly #realRoot: string
	readonly #shown: string

	private constructor(handle: FileHandle, realRoot: string, shown: string) {
		this.handle = handle
		this.#realRoot = realRoot
		this.#shown = shown
	}

	/**
	 * Opens `directory` (absolute, admitted by the jail under `realRoot`), creating what is missing
	 * of it one component at a time below the deepest existing, verified ancestor — `mkdir -p` that
	 * a swapped component cannot send outside the root. A failure to create is `mkdir_failed`.
	 */
	static async open(
		directory: string,
		realRoot: string,
		shown: string,
		options: { readonly create: boolean },
	): Promise<JailedDirectory> {
		const held = holdDirectory(directory, realRoot, shown, options.create)
		let handle: FileHandle
		try {
			handle = await open(entryOf(held, '.'), constants.O_RDONLY | constants.O_DIRECTORY)
		} finally {
			closeSync(held)
		}
		const opened = new JailedDirectory(handle, realRoot, shown)
		try {
			opened.verify()
		} catch (error) {
			await opened.close()
			throw error
		}
		return opened
	}

	/** `name` inside this directory, resolved from the held descriptor. */
	entry(name: string): string {
		return entryOf(this.handle.fd, name)
	}

	verify(): void {
		assertDescriptorWithin(this.handle.fd, this.#realRoot, this.#shown)
	}

	close(): Promise<void> {
		return this.handle.close().catch(() => undefined)
	}

	/** A failed call on one of this directory's entries, told with the directory's path. */
	refusal(error: unknown, directory: string): OpRefusal {
		if (error instanceof OpRefusal) return error
		const message = error instanceof Error ? error.message : String(error)
		return new OpRefusal(message.replaceAll(this.entry(''), `${directory}/`))
	}
}

function mkdirFailed(error: unknown, directory: string, shown: string): OpRefusal {
	if (error instanceof OpRefusal) return error
	const code = errnoCode(error)
	// A name that became a symlink between our mkdir and our open of it.
	if (code === 'ELOOP') return pathEscapesWorkspace(shown)
	return new OpRefusal(
		formatRefusal(
			AGENT_REFUSAL.mkdir_failed,
			`${code ?? String(error)}: cannot create ${directory}`,
		),
	)
}

/** An `O_PATH` descriptor of `directory`, created below its nearest existing ancestor if asked. */
function holdDirectory(
	directory: string,
	realRoot: string,
	shown: string,
	create: boolean,
): number {
	let nearest: ReturnType<typeof walkToNearest>
	try {
		nearest = walkToNearest(directory)
	} catch {
		throw pathEscapesWorkspace(shown)
	}
	let fd = nearest.fd
	try {
		assertDescriptorWithin(fd, realRoot, shown)
		for (const name of nearest.missing) {
			if (!create) {
				throw Object.assign(new Error(`ENOENT: no such directory, ${directory}`), {
					code: 'ENOENT',
				})
			}
			try {
				mkdirSync(entryOf(fd, name))
			} catch (error) {
				if (errnoCode(error) !== 'EEXIST') throw error
			}
			// O_NOFOLLOW: a name swapped for a symlink since the mkdir is refused, never followed.
			const next = openSync(
				entryOf(fd, name),
				O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW,
			)
			closeSync(fd)
			fd = next
			// `..` can only come from a symlink's target: wherever it leads must still be inside.
			if (name === '..') assertDescriptorWithin(fd, realRoot, shown)
		}
		return fd
	} catch (error) {
		closeSync(fd)
		throw create ? mkdirFailed(error, directory, shown) : error
	}
}
