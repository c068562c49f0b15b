/**
 * The real path of a path, walked one component at a time from a held directory descriptor:
 * each step looks up one name under `/proc/self/fd/<fd>/` (the kernel jumps straight to the open
 * directory, so a step costs the same however deep it is), follows a symlink by pushing its target's
 * components, and stops at the first name that does not exist. Linear in the path's length, where
 * re-resolving every prefix (what `realpath` and a dirname loop do) is quadratic: a 100 KB path
 * once blocked the agent's event loop for a minute.
 *
 * Linux only (`O_PATH`, `/proc/self/fd`), like the rest of the agent.
 */
import { closeSync, constants, lstatSync, openSync, readlinkSync } from 'node:fs'
import { join } from 'node:path'

/** `O_PATH` (Linux): a descriptor that names a place without opening it for I/O. */
export const O_PATH = 0o10000000
/** The kernel's own bound on symlinks followed while resolving one path. */
export const MAX_SYMLINK_FOLLOWS = 40

const PROC_SELF_FD = '/proc/self/fd'

/** `name` looked up in the directory `fd` holds, without re-walking that directory's path. */
export function entryOf(fd: number, name: string): string {
	return `${PROC_SELF_FD}/${fd}/${name}`
}

/** The path the kernel holds for descriptor `fd`: the real path, symlinks already resolved. */
export function descriptorPath(fd: number): string {
	return readlinkSync(`${PROC_SELF_FD}/${fd}`)
}

/** A directory held as `O_PATH`: the deepest one that exists, and the names below it that do not. */
export interface NearestDirectory {
	/** The caller closes it. */
	readonly fd: number
	/**
	 * The rest of the path below `fd`: names that do not exist yet (the first may exist as a
	 * non-directory, in which case nothing after it can).
	 */
	readonly missing: readonly string[]
}

export class SymlinkLoopError extends Error {
	override readonly name = 'SymlinkLoopError'
	readonly code = 'ELOOP'
}

function isMissing(error: unknown): boolean {
	const code = (error as NodeJS.ErrnoException | undefined)?.code
	return code === 'ENOENT' || code === 'ENOTDIR'
}

/** Components of `path` in reverse order (the next one to take is last). */
function reversedComponents(path: string): string[] {
	return path
		.split('/')
		.filter((name) => name !== '' && name !== '.')
		.reverse()
}

const DIRECTORY_FLAGS = O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW

/**
 * Walks absolute `path` physically (symlinks followed, `..` taken in the directory reached) to the
 * deepest existing directory. Throws for a symlink loop or an unreadable directory.
 */
export function walkToNearest(path: string): NearestDirectory {
	const pending = reversedComponents(path)
	let fd = openSync('/', O_PATH | constants.O_DIRECTORY)
	let follows = 0
	try {
		for (let name = pending.pop(); name !== undefined; name = pending.pop()) {
			const entry = entryOf(fd, name)
			let isLink: boolean
			let isDirectory: boolean
			try {
				const stats = lstatSync(entry)
				isLink = stats.isSymbolicLink()
				isDirectory = stats.isDirectory()
			} catch (error) {
				if (!isMissing(error)) throw error
				return { fd, missing: [name, ...pending.reverse()] }
			}
			if (isLink) {
				if (++follows > MAX_SYMLINK_FOLLOWS)
					throw new SymlinkLoopError(`too many symlinks: ${path}`)
				const target = readlinkSync(entry)
				if (target.startsWith('/')) {
					const root = openSync('/', O_PATH | constants.O_DIRECTORY)
					closeSync(fd)
					fd = root
				}
				pending.push(...reversedComponents(target))
				continue
			}
			if (!isDirectory) return { fd, missing: [name, ...pending.reverse()] }
			const next = openSync(entry, DIRECTORY_FLAGS)
			closeSync(fd)
			fd = next
		}
		return { fd, missing: [] }
	} catch (error) {
		closeSync(fd)
		throw error
	}
}

/**
 * Real path of `path` when it exists, else the real path of its nearest existing ancestor joined
 * with the missing tail (what the path will be once created).
 */
export function realpathOfNearest(path: string): string {
	const nearest = walkToNearest(path)
	try {
		return join(descriptorPath(nearest.fd), nearest.missing.join('/'))
	} finally {
		closeSync(nearest.fd)
	}
}
